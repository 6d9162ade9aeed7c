/* The per-run supervisor process (see supervisor.h). */
#include "supervisor/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <airlock/json.h>
#include <airlock/provider.h>

#include "bundle/bundle.h"
#include "core/log.h"
#include "core/util.h"
#include "host/build_cache_dir.h"
#include "host/judge.h"
#include "child/artifacts.h"
#include "supervisor/control.h"
#include "supervisor/record_file.h"
#include "supervisor/identity.h"
#include "supervisor/inbox.h"
#include "supervisor/outlog.h"
#include "supervisor/reuse.h"
#include "cgroup/cgroup.h"
#include "supervisor/run_records.h"
#include "supervisor/toolbelt.h"
#include "sandbox/sandbox.h"

/* After the deadline, how long the provider gets to end the run (it sends
 * TERM, then KILL after its grace) before the supervisor records the
 * timeout itself and exits; the daemon then ends what is left through the
 * run's cgroup. */
#define OVERDUE_MS (AL_DEFAULT_GRACE_MS + 3000)
#define MAX_SECRETS_BYTES (4u * 1024u * 1024u)
/* result.json's space taken before the run (a result with the output of
 * a typical run fits); a larger one waits in memory when the disk is
 * full. */
/* Retries of a result the disk has no room for: 100 ms, doubling to 5 s,
 * for as long as this process lives. */
#define RETRY_FIRST_MS 100
#define RETRY_MAX_MS 5000

typedef struct sup {
	const char *run_id;
	int dirfd;
	al_recovery rec;
	char *run_dir;	/* absolute */
	char *inbox, *acks, *work;
	al_request *req;
	char **host_env;
	size_t n_host_env;
	const al_provider_ops *ops;
	al_provider_handle *handle;
	al_cancel *cancel;
	al_outlog_writer out;
	/* The request's bundle and manifest, and the run's artifact store,
	 * locked for as long as this process lives (docs/workspaces.md). */
	al_bundle *bundle;
	al_manifest *manifest;
	al_artifact_store store;
	char *build_cache_dir; /* NULL: no build cache */
	al_record_file_reserve reserve;
	/* The toolbelt (docs/toolbelt.md), when granted. */
	al_toolbelt *tb;
	char *tool_dir, *tool_bin;
	char tool_token[65];
	/* Written by the executing thread, read after done_fd fires. */
	al_result *res;
	int exec_rc;
	al_error *exec_err;
	int done_fd;
	int stdin_fd; /* the live stdin stream, or -1 */
	/* The handle outlives the run: the idle supervisor serves another
	 * (docs/durability.md, "A supervisor that serves several runs"). */
	bool keep_handle;
} sup;

static void say(const sup *s, al_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(const sup *s, al_log_level level, const char *fmt, ...)
{
	/* stderr is RUN/supervisor.log; never a request value or secret. */
	va_list ap;
	char *msg = NULL;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	al_log_field f[] = {AL_LF_S("run_id", s->run_id),
			    AL_LF_S("process", "supervisor")};
	al_log_fields(level, msg != NULL ? msg : fmt, f, 2);
	free(msg);
}

static void on_output(void *ctx, int stream, const unsigned char *data,
		      size_t len)
{
	sup *s = ctx;
	/* Output only when the grant streams; events (a remote run's,
	 * served by the back end) whenever the toolbelt is granted. */
	if (stream == AL_OUTLOG_EVENT ? s->req->grant.toolbelt
				      : s->req->grant.streaming)
		al_outlog_append(&s->out, stream, data, len);
}

static void *exec_main(void *arg)
{
	sup *s = arg;
	al_exec ex = {
		AL_ABI_HEADER(al_exec),
		.run_id = s->run_id,
		.request = s->req,
		.on_output = s->req->grant.streaming ||
					     (s->req->grant.toolbelt &&
					      s->tb == NULL)
				     ? on_output
				     : NULL,
		.on_output_ctx = s,
		.cancel = s->cancel,
		.host_env = (const char *const *)s->host_env,
		.n_host_env = s->n_host_env,
		.inbox_dir = s->inbox,
		.inbox_acks_dir = s->acks,
		.bundle = s->bundle,
		.manifest = s->manifest,
		.artifact_dir = s->store.path,
		.tool_dir = s->tb != NULL ? s->tool_dir : NULL,
		.tool_bin_dir = s->tb != NULL ? s->tool_bin : NULL,
		.tool_token = s->tb != NULL ? s->tool_token : NULL,
		.build_cache_dir = s->build_cache_dir,
		.build_cache_bytes = s->rec.build_cache_bytes,
		.stdin_stream = s->stdin_fd >= 0,
		.stdin_fd = s->stdin_fd,
	};
	s->exec_rc = s->req->n_tests > 0
			     ? al_judge_execute(s->ops, s->handle, &ex,
						s->rec.parallel, s->res,
						&s->exec_err)
			     : s->ops->execute(s->handle, &ex, s->res,
					       &s->exec_err);
	uint64_t one = 1;
	if (write(s->done_fd, &one, sizeof(one)) < 0) {
		/* the main loop then waits out the deadline */
	}
	return NULL;
}

/* ---- reading what the daemon persisted ------------------------------ */

/* The secrets come on an in-memory file: a JSON array of "NAME=value". */
static int read_secrets(sup *s, int fd)
{
	char *buf = malloc(MAX_SECRETS_BYTES + 1);
	size_t got = 0;
	int rc = 0;
	if (buf == NULL)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, buf + got, MAX_SECRETS_BYTES - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got == MAX_SECRETS_BYTES) {
			rc = -EFBIG;
			goto out;
		}
	}
	buf[got] = '\0';
	json_t *arr = json_loadb(buf, got, 0, NULL);
	size_t n = json_array_size(arr);
	if (!json_is_array(arr)) {
		rc = -EBADMSG;
	} else if (n > 0 &&
		   (s->host_env = calloc(n + 1, sizeof(char *))) == NULL) {
		rc = -ENOMEM;
	} else {
		for (size_t i = 0; i < n && rc == 0; i++) {
			const char *v = json_string_value(json_array_get(arr, i));
			if (v == NULL)
				rc = -EBADMSG;
			else if ((s->host_env[i] = strdup(v)) == NULL)
				rc = -ENOMEM;
			else
				s->n_host_env = i + 1;
		}
	}
	json_decref(arr);
out:
	explicit_bzero(buf, got);
	free(buf);
	return rc;
}

static int setup_paths(sup *s, const char *state_dir)
{
	char *abs = realpath(state_dir, NULL);
	if (abs == NULL)
		return -errno;
	s->run_dir = al_strdup_printf("%s/" AL_RUNS_DIR "/%s", abs, s->run_id);
	free(abs);
	if (s->run_dir == NULL ||
	    (s->inbox = al_strdup_printf("%s/" AL_RF_INBOX, s->run_dir)) ==
		    NULL ||
	    (s->acks = al_strdup_printf("%s/" AL_RF_ACKS, s->run_dir)) == NULL ||
	    (s->work = al_strdup_printf("%s/" AL_RF_WORK, s->run_dir)) == NULL)
		return -ENOMEM;
	return 0;
}

/* ---- recording the result ------------------------------------------- */

/* A result for a run that could not start here. */
static al_result *refusal(const sup *s, const char *reason)
{
	al_result *r = al_result_new();
	if (r == NULL)
		return NULL;
	snprintf(r->run_id, sizeof(r->run_id), "%s", s->run_id);
	r->finished_at_ms = al_now_ms();
	if (al_result_set_outcome(r, AL_OUTCOME_UNAVAILABLE, reason) < 0) {
		al_result_free(r);
		return NULL;
	}
	return r;
}

/* The provider's own message for its failure goes to RUN/provider_error
 * (the daemon copies it to its log with the run id); the result says only
 * provider_error or sandbox_unavailable, since a provider's message may
 * hold what a caller must not see (paths, a remote's answer). */
static void provider_failed(const sup *s, const char *what,
			    const al_error *err)
{
	const char *msg = al_error_get_message(err);
	json_t *o = json_pack("{s:s, s:s, s:s}", "provider", s->rec.provider,
			      "call", what, "message",
			      msg != NULL && msg[0] ? msg : "(no message)");
	int rc = o == NULL ? -ENOMEM
			   : al_record_file_write_json_how(s->dirfd, AL_RF_PROVIDER_ERROR,
						     o, 0600, AL_RECORD_FILE_ATOMIC);
	json_decref(o);
	say(s, AL_LOG_WARN, "the provider's %s failed%s", what,
	    rc < 0 ? " (its message could not be recorded)"
		   : " (its message: " AL_RF_PROVIDER_ERROR ")");
}

/* The run's own deadline passed: a timeout, as the host reports its own
 * (no exit code, no signal), with the output kept. */
static void as_timed_out(al_result *r)
{
	r->has_exit_code = r->has_signal = false;
	r->exit_code = r->signal = 0;
	(void)al_result_set_outcome(r, AL_OUTCOME_TIMED_OUT, "host_deadline");
	if (!r->finished_at_ms)
		r->finished_at_ms = al_now_ms();
}

/* Under the run's lock: the acknowledged events, then result.json
 * atomically and durably (into the space reserved for it when it fits).
 * Never replaces a result already recorded. */
static int record_once(sup *s, al_result *res)
{
	int lock = al_record_file_lock_dir(s->dirfd);
	int rc = lock < 0 ? lock : 0;
	char *json = NULL;
	if (rc == 0 && al_record_file_exists(s->dirfd, AL_RF_RESULT))
		rc = -EEXIST;
	if (rc == 0) {
		/* Listed afresh at each attempt. */
		for (size_t i = 0; i < res->n_inbox_acked; i++)
			free(res->inbox_acked[i]);
		free(res->inbox_acked);
		int ar = al_inbox_acked(s->dirfd, &res->inbox_acked,
					&res->n_inbox_acked);
		if (ar == 0)
			ar = al_inbox_result_pending(s->dirfd, res);
		if (ar < 0)
			say(s, AL_LOG_WARN,
			    "cannot list the inbox acknowledgements: %s",
			    strerror(-ar));
		json = al_result_to_json(res, 0);
		size_t len = json != NULL ? strlen(json) : 0;
		/* The reserve is the record's own temp file: a result that
		 * fits costs no second file, full disk or not. */
		if (json == NULL)
			rc = -ENOMEM;
		else if (s->reserve.fd >= 0 && len <= s->reserve.size)
			rc = al_record_file_reserve_commit(s->dirfd, &s->reserve,
						     AL_RF_RESULT, json, len);
		else
			rc = al_record_file_write(s->dirfd, AL_RF_RESULT, json, len,
					    0600);
	}
	if (lock >= 0)
		close(lock);
	free(json);
	return rc;
}

/* The result, recorded.  When the disk has no room for it, it is kept
 * here and retried (the lock is not held in between) while
 * RUN/result.pending tells the daemon the outcome is known and on its
 * way: the daemon neither kills this process nor calls the run lost. */
static int record(sup *s, al_result *res)
{
	int rc, delay = RETRY_FIRST_MS;
	bool pending = false;
	while (al_record_file_no_space(rc = record_once(s, res))) {
		if (!pending) {
			say(s, AL_LOG_WARN,
			    "cannot record the result: %s; kept in memory, "
			    "retrying",
			    strerror(-rc));
			/* The reserve did not take it (too small): its
			 * space may as well serve the retry. */
			al_record_file_reserve_drop(s->dirfd, &s->reserve);
			int pr = al_record_file_touch(s->dirfd, AL_RF_PENDING);
			if (pr < 0)
				say(s, AL_LOG_WARN,
				    "cannot mark the result pending: %s",
				    strerror(-pr));
			pending = true;
		}
		struct timespec ts = {delay / 1000,
				      (long)(delay % 1000) * 1000000L};
		nanosleep(&ts, NULL);
		delay = delay * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : delay * 2;
	}
	if (pending) {
		unlinkat(s->dirfd, AL_RF_PENDING, 0);
		if (rc == 0)
			say(s, AL_LOG_INFO, "%s", "the result is recorded");
	}
	if (rc < 0)
		say(s, AL_LOG_WARN, "cannot record the result: %s",
		    strerror(-rc));
	return rc;
}

/* ---- control --------------------------------------------------------- */

/* A doorbell: obey the control request only when its epoch is current. */
static void on_doorbell(sup *s)
{
	uint64_t epoch = 0, lease = 0;
	al_control_action action;
	if (al_control_read(s->dirfd, &epoch, &action) < 0 ||
	    al_lease_read(s->dirfd, &s->rec, &lease) < 0) {
		say(s, AL_LOG_WARN, "%s",
		    "a control request without a readable record: "
		    "ignored");
		return;
	}
	if (epoch < lease) {
		say(s, AL_LOG_WARN, "%s",
		    "a control request from a superseded daemon "
		    "(lower epoch): refused");
		return;
	}
	say(s, AL_LOG_INFO, "%s",
	    action == AL_CONTROL_STOP ? "stop: interrupting the run"
				      : "interrupting the run");
	al_cancel_fire(s->cancel, AL_CANCEL_INTERRUPTED);
}

static int make_timer(int64_t at_ms)
{
	int fd = timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct itimerspec its = {0};
	if (at_ms <= 0)
		at_ms = 1;
	its.it_value.tv_sec = at_ms / 1000;
	its.it_value.tv_nsec = (at_ms % 1000) * 1000000L;
	if (timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* Waits for the execution, serving doorbells and the deadline.  Returns
 * 0 when the execution returned, 1 when it overran the deadline past
 * OVERDUE_MS (the caller records a timeout without it). */
static int supervise_loop(sup *s, int sig_fd, bool *deadline_hit)
{
	int timer = make_timer(s->rec.deadline_ms);
	int rc = 0;
	int64_t overdue_at = 0;
	if (timer < 0)
		say(s, AL_LOG_WARN, "cannot arm the deadline timer: %s",
		    strerror(-timer));
	for (;;) {
		struct pollfd pfd[3] = {{s->done_fd, POLLIN, 0},
					{sig_fd, POLLIN, 0},
					{timer, POLLIN, 0}};
		int wait_ms = -1;
		if (overdue_at != 0) {
			int64_t left = overdue_at - al_now_ms();
			if (left <= 0) {
				rc = 1;
				break;
			}
			wait_ms = left > 1000 ? 1000 : (int)left;
		}
		int n = poll(pfd, 3, wait_ms);
		if (n < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break;
		if (pfd[1].revents) {
			struct signalfd_siginfo si;
			if (read(sig_fd, &si, sizeof(si)) == sizeof(si) &&
			    si.ssi_signo == SIGUSR1)
				on_doorbell(s);
		}
		if (timer >= 0 && pfd[2].revents) {
			uint64_t ticks;
			if (read(timer, &ticks, sizeof(ticks)) < 0) {
				/* drained or not, it fired */
			}
			close(timer);
			timer = -1;
			if (al_cancel_state(s->cancel) == AL_CANCEL_NONE) {
				say(s, AL_LOG_INFO, "%s",
				    "the run's deadline passed");
				*deadline_hit = true;
				al_cancel_fire(s->cancel, AL_CANCEL_CANCELLED);
			}
			overdue_at = al_now_ms() + OVERDUE_MS;
		}
	}
	if (timer >= 0)
		close(timer);
	return rc;
}

/* ---- main ------------------------------------------------------------ */

static void sup_clear(sup *s)
{
	if (s->stdin_fd >= 0)
		close(s->stdin_fd);
	if (!s->keep_handle && s->handle != NULL && s->ops->release != NULL &&
	    s->ops->release(s->handle, NULL) < 0)
		say(s, AL_LOG_WARN, "%s",
		    "the provider handle did not release");
	(void)al_toolbelt_finish(s->tb, NULL);
	s->tb = NULL;
	explicit_bzero(s->tool_token, sizeof(s->tool_token));
	free(s->tool_dir);
	free(s->tool_bin);
	al_outlog_close(&s->out);
	al_result_free(s->res);
	al_error_free(s->exec_err);
	al_cancel_free(s->cancel);
	if (s->done_fd >= 0)
		close(s->done_fd);
	for (size_t i = 0; i < s->n_host_env; i++)
		al_explicit_free_str(s->host_env[i]);
	free(s->host_env);
	al_request_free(s->req);
	al_manifest_free(s->manifest);
	al_bundle_free(s->bundle);
	al_artifacts_close(&s->store);
	free(s->build_cache_dir);
	s->build_cache_dir = NULL;
	if (s->dirfd >= 0)
		al_record_file_reserve_drop(s->dirfd, &s->reserve);
	free(s->run_dir);
	free(s->inbox);
	free(s->acks);
	free(s->work);
	al_recovery_clear(&s->rec);
	if (s->dirfd >= 0)
		close(s->dirfd);
}

/* The mandatory probe right before an ensure (docs/host.md): facts can
 * have changed since the daemon's selection. */
static int reprobe(const al_provider_ops *ops, const char *config,
		   al_error **err)
{
	al_facts *f = NULL;
	int rc = ops->probe(config, &f, err);
	if (rc == 0 && (f == NULL || !f->available))
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, EAGAIN, NULL,
				  "the provider is no longer available: %s",
				  f != NULL && f->unavailable_reason != NULL
					  ? f->unavailable_reason
					  : "no facts");
	al_facts_free(f);
	return rc < 0 ? rc : 0;
}

/* The toolbelt's server and credential (docs/toolbelt.md); NULL when it
 * serves, else the reason the run cannot start. */
static const char *start_toolbelt(sup *s)
{
	al_toolbelt_cfg cfg = {.run_dirfd = s->dirfd,
			       .run_id = s->run_id,
			       .request_json = s->rec.request,
			       .deadline_ms = s->rec.deadline_ms,
			       .outlog_fd = s->out.fd,
			       .webhook = al_tool_webhook_post};
	if ((s->tool_bin = al_toolbelt_bin_dir()) == NULL) {
		say(s, AL_LOG_WARN, "%s",
		    "the toolbelt is granted but airlock-tool is not installed");
		return "toolbelt_unavailable";
	}
	if ((s->tool_dir = al_toolbelt_dir(s->run_dir)) == NULL)
		return "start_failed";
	int rc = al_toolbelt_start(&cfg, s->tool_token, &s->tb);
	if (rc < 0) {
		say(s, AL_LOG_WARN, "cannot serve the toolbelt: %s",
		    strerror(-rc));
		return "toolbelt_unavailable";
	}
	return NULL;
}

/* Reads everything and ensures the provider; a failure is the reason
 * for an `unavailable` result (NULL: ready to execute). */
/* An interactive run's stdin (docs/compat.md): the daemon made RUN/stdin
 * a FIFO and holds its write end open before starting this process, so
 * opening it never blocks and its end (the daemon closing it, or going
 * away) is the program's end of input.  Only the providers that honour
 * al_exec's stream take such a run. */
static const char *open_stdin_stream(sup *s)
{
	struct stat st;
	if (fstatat(s->dirfd, AL_RF_STDIN, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? NULL : "start_failed";
	if (!S_ISFIFO(st.st_mode))
		return "start_failed";
	if (s->req->n_tests > 0 || s->rec.module != NULL ||
	    (strcmp(s->rec.provider, "sandbox") != 0 &&
	     strcmp(s->rec.provider, "local") != 0))
		return "stdin_stream_unsupported";
	s->stdin_fd = openat(s->dirfd, AL_RF_STDIN,
			     O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	int fl = s->stdin_fd < 0 ? -1 : fcntl(s->stdin_fd, F_GETFL);
	if (fl < 0 || fcntl(s->stdin_fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
		return "start_failed";
	return NULL;
}

static const char *prepare(sup *s, const char *state_dir, int secrets_fd)
{
	/* The request and the provider come from the run's record. */
	const char *provider = s->rec.provider;
	const char *why = NULL;
	int rc;

	if (secrets_fd >= 0) {
		rc = read_secrets(s, secrets_fd);
		close(secrets_fd);
		if (rc < 0)
			return "secret_unavailable";
	}
	if (setup_paths(s, state_dir) < 0)
		return "start_failed";
	if (s->rec.request == NULL ||
	    al_request_from_json(s->rec.request, strlen(s->rec.request),
				 &s->req, NULL) < 0)
		return "start_failed";
	/* The immutable bundle the provider materialises, and the store its
	 * artifacts go to. */
	char *abs = realpath(state_dir, NULL);
	int brc = abs == NULL ? -errno : al_bundle_new(s->req, &s->bundle, NULL);
	if (brc == 0)
		brc = al_manifest_new(s->bundle, &s->manifest);
	if (brc == 0 &&
	    al_artifacts_create_ahead(abs, s->run_id, s->dirfd,
				      AL_RF_STORE_AHEAD, &s->store, NULL) < 0)
		why = "artifacts_unavailable";
	else if (brc < 0)
		why = "start_failed";
	/* The tenant's build cache (docs/languages.md, "Build cache"). */
	if (why == NULL && abs != NULL && s->rec.build_cache_bytes > 0)
		s->build_cache_dir = al_host_build_cache_dir(
			abs, s->rec.tenant, s->rec.build_cache_shared);
	free(abs);
	if (why != NULL)
		return why;
	/* An idle supervisor ensured its provider before the run came: it
	 * must be the run's.  A provider module is loaded from the path the
	 * daemon's configuration named (checked again as it loads). */
	if (s->handle == NULL && s->rec.module != NULL) {
		al_error *err = NULL;
		if (al_provider_module_load(provider, s->rec.module, &s->ops,
					    &err) < 0) {
			provider_failed(s, "load", err);
			al_error_free(err);
			return "sandbox_unavailable";
		}
	} else if (s->handle == NULL) {
		s->ops = al_provider_lookup(provider);
	}
	if (why == NULL)
		why = open_stdin_stream(s);
	/* The provider's run directory goes beneath the run's own, or to
	 * the per-boot tmpfs when nothing in it must outlive a reboot. */
	const char *work = al_run_work_tmpfs(provider, s->rec.module);
	if (why == NULL &&
	    setenv("AIRLOCK_RUN_BASE", work != NULL ? work : s->work, 1) < 0)
		why = "start_failed";
	else if (s->ops == NULL || strcmp(s->ops->id, provider) != 0)
		why = "start_failed";
	else if (s->handle == NULL) {
		al_error *err = NULL;
		if (reprobe(s->ops, s->rec.config, &err) < 0) {
			provider_failed(s, "probe", err);
			why = "sandbox_unavailable";
		} else if (s->ops->ensure(s->rec.config, &s->handle, &err) <
			   0) {
			provider_failed(s, "ensure", err);
			why = "sandbox_unavailable";
		}
		al_error_free(err);
	}
	if (why == NULL &&
	    (s->req->grant.streaming || s->req->grant.toolbelt) &&
	    (rc = al_outlog_open(s->dirfd, s->req->limits.output_bytes,
				 &s->out)) < 0)
		say(s, AL_LOG_WARN, "cannot open the output file: %s",
		    strerror(-rc));
	/* A remote run's toolbelt is served by the back end, which runs the
	 * program (docs/toolbelt.md, "Remote"). */
	if (why == NULL && s->req->grant.toolbelt &&
	    strcmp(s->ops->id, "remote") != 0)
		why = start_toolbelt(s);
	return why;
}

/* Signals are read from a signalfd by the main thread; every thread
 * (the provider's too) inherits the mask.  *set: the ones read. */
static void block_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGUSR1);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, set, NULL);
	sigdelset(set, SIGPIPE);
}

/* One run, to its recorded result.  ops/handle: the provider an idle
 * supervisor already ensured (taken), or NULL. */
static int run_one(const char *state_dir, const char *run_id,
		   const char *nonce, int secrets_fd,
		   const al_provider_ops *ops, al_provider_handle *handle,
		   bool keep_handle)
{
	sup s = {.run_id = run_id, .dirfd = -1, .done_fd = -1, .stdin_fd = -1,
		 .out = {.fd = -1}, .store = {.dirfd = -1},
		 .reserve = {.fd = -1}, .ops = ops, .handle = handle,
		 .keep_handle = keep_handle && handle != NULL};
	int runs_fd = -1, sig_fd = -1, rc = 1;
	bool deadline_hit = false;
	sigset_t set;

	block_signals(&set);
	if ((sig_fd = signalfd(-1, &set, SFD_CLOEXEC)) < 0 ||
	    al_runs_dir_open(state_dir, &runs_fd) < 0 ||
	    al_run_dir_open(runs_fd, run_id, false, &s.dirfd) < 0 ||
	    al_recovery_read(s.dirfd, run_id, &s.rec) < 0 ||
	    strcmp(s.rec.nonce, nonce) != 0) {
		/* Not this run's supervisor: touch nothing. */
		al_logf(AL_LOG_ERROR, run_id,
			"the run's records do not match; nothing done");
		if (secrets_fd >= 0)
			close(secrets_fd);
		rc = 2;
		goto out;
	}
	if ((s.cancel = al_cancel_new()) == NULL ||
	    (s.res = al_result_new()) == NULL ||
	    (s.done_fd = eventfd(0, EFD_CLOEXEC)) < 0) {
		if (secrets_fd >= 0)
			close(secrets_fd);
		goto out;
	}
	snprintf(s.res->run_id, sizeof(s.res->run_id), "%s", run_id);
	const char *why = prepare(&s, state_dir, secrets_fd);
	if (why != NULL) {
		say(&s, AL_LOG_WARN, "cannot start the run: %s", why);
		al_result *r = refusal(&s, why);
		rc = r != NULL && record(&s, r) == 0 ? 0 : 1;
		al_result_free(r);
		goto out;
	}
	/* The result's space, before anything can fill the disk. */
	int rr = al_record_file_reserve_open(s.dirfd, AL_RF_RESERVE,
				       AL_RF_RESERVE_BYTES, &s.reserve);
	if (rr < 0)
		say(&s, AL_LOG_WARN, "cannot reserve the result's space: %s",
		    strerror(-rr));
	/* A request written before this process was listening. */
	if (al_record_file_exists(s.dirfd, AL_RF_CONTROL))
		on_doorbell(&s);
	pthread_t tid;
	if (pthread_create(&tid, NULL, exec_main, &s) != 0) {
		al_result *r = refusal(&s, "start_failed");
		rc = r != NULL && record(&s, r) == 0 ? 0 : 1;
		al_result_free(r);
		goto out;
	}
	if (supervise_loop(&s, sig_fd, &deadline_hit) == 1) {
		/* The provider did not end the run in time: record the
		 * timeout and go; the daemon kills what is left. */
		al_result *r = refusal(&s, NULL);
		if (r != NULL)
			as_timed_out(r);
		(void)al_toolbelt_finish(s.tb, r);
		s.tb = NULL;
		rc = r != NULL && record(&s, r) == 0 ? 0 : 1;
		al_result_free(r);
		_exit(rc);
	}
	pthread_join(tid, NULL);
	if (s.exec_rc < 0) {
		/* A provider bug: its result is not trusted. */
		provider_failed(&s, "execute", s.exec_err);
		al_result_free(s.res);
		s.res = refusal(&s, "provider_error");
		if (s.res == NULL)
			goto out;
	} else if (deadline_hit && al_outcome_ran(s.res->outcome)) {
		as_timed_out(s.res);
	}
	/* The process is seen to have finished: a declaration takes effect
	 * now (never earlier), and the events join the result. */
	if (al_toolbelt_finish(s.tb, s.res) < 0)
		say(&s, AL_LOG_WARN, "%s", "cannot apply the toolbelt's record");
	s.tb = NULL;
	snprintf(s.res->run_id, sizeof(s.res->run_id), "%s", run_id);
	rc = record(&s, s.res) == 0 ? 0 : 1;
out:
	sup_clear(&s);
	if (sig_fd >= 0)
		close(sig_fd);
	if (runs_fd >= 0)
		close(runs_fd);
	return rc;
}

int al_supervisor_main(const char *state_dir, const char *run_id,
		       const char *nonce, int secrets_fd)
{
	if (!al_run_id_valid(run_id) || !al_nonce_valid(nonce)) {
		al_logf(AL_LOG_ERROR, NULL, "supervise: bad run id or nonce");
		if (secrets_fd >= 0)
			close(secrets_fd);
		return 2;
	}
	return run_one(state_dir, run_id, nonce, secrets_fd, NULL, NULL, false);
}

/* ---- idle ------------------------------------------------------------ */

#define IDLE_MSG_MAX (AL_RF_MAX_SMALL * 4)

/* Reads one message; 0 at the end of the socket (the daemon is gone). */
static ssize_t idle_recv(int sock, char *buf, size_t len, int *fds,
			 size_t max_fds, size_t *n_fds)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 2)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = buf, .iov_len = len - 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = u.b, .msg_controllen = sizeof(u.b)};
	ssize_t n;
	*n_fds = 0;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); n >= 0 && c != NULL;
	     c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int got[2];
		memcpy(got, CMSG_DATA(c), sizeof(int) * (k > 2 ? 2 : k));
		for (size_t i = 0; i < k && i < 2; i++) {
			if (*n_fds < max_fds)
				fds[(*n_fds)++] = got[i];
			else
				close(got[i]);
		}
	}
	if (n > 0 && (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		n = -EMSGSIZE;
	else if (n < 0)
		n = -errno;
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* The provider to ensure: {"provider": id, "config": object|null,
 * "runs": N (optional: how many runs it may serve, 1 when absent)}. */
static int idle_ensure(const char *msg, const al_provider_ops **ops,
		       al_provider_handle **handle, unsigned *runs)
{
	json_t *o = json_loads(msg, 0, NULL);
	json_t *cfg = json_object_get(o, "config");
	json_t *jr = json_object_get(o, "runs");
	const char *id = json_string_value(json_object_get(o, "provider"));
	char *cfg_text = NULL;
	int rc = 0;
	*runs = 1;
	if (id == NULL ||
	    (cfg != NULL && !json_is_null(cfg) && !json_is_object(cfg)) ||
	    (jr != NULL && (!json_is_integer(jr) || json_integer_value(jr) < 1)) ||
	    (*ops = al_provider_lookup(id)) == NULL) {
		rc = -EBADMSG;
		goto out;
	}
	if (jr != NULL)
		*runs = json_integer_value(jr) > AL_SUP_RUNS_MAX
				? AL_SUP_RUNS_MAX
				: (unsigned)json_integer_value(jr);
	if (json_is_object(cfg) &&
	    (cfg_text = json_dumps(cfg, JSON_COMPACT)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	rc = reprobe(*ops, cfg_text, NULL) < 0 ||
			     (*ops)->ensure(cfg_text, handle, NULL) < 0
		     ? -EIO
		     : 0;
out:
	if (cfg_text != NULL)
		al_explicit_free_str(cfg_text);
	json_decref(o);
	return rc;
}

/* Only the built-in sandbox's runs are served in sequence: its program
 * runs in namespaces of its own (a pid namespace ends the whole tree with
 * its init) and cannot reach this process, while a `local` run is this
 * process's uid unconfined (it could ptrace or write into it) and other
 * providers are not ours to vouch for. */
static bool reusable_provider(const al_provider_ops *ops)
{
	return ops != NULL && strcmp(ops->id, "sandbox") == 0;
}

/* How long the checks after a run wait for its last processes and
 * threads to be gone before refusing another run. */
#define SETTLE_MS 500
#define SETTLE_STEP_MS 5

/* What the run ended may still be on its way out (a process the pid
 * namespace's end killed, a thread past its join): a moment to settle,
 * then the verdict.  NULL when the supervisor's cgroup holds only itself
 * and its ready members and, with before, the process is as it was
 * (reuse.h); else what differs. */
static const char *settled(al_provider_handle *handle,
			   const al_reuse_state *before)
{
	al_reuse_state after;
	al_reuse_keep keep = {.n = 0};
	const char *what;
	for (int waited = 0;; waited += SETTLE_STEP_MS) {
		keep.n = al_sandbox_pool_cgroups(handle, keep.names,
						 AL_REUSE_KEEP_MAX);
		bool alone = al_reuse_tree_alone(&keep);
		what = !alone		? "cgroup"
		       : before == NULL ? NULL
		       : al_reuse_snapshot(&after) < 0
			       ? "process"
			       : al_reuse_differs(before, &after);
		if (what == NULL || waited >= SETTLE_MS)
			return what;
		struct timespec ts = {0, SETTLE_STEP_MS * 1000000L};
		nanosleep(&ts, NULL);
	}
}

static void refuse_another(const char *what)
{
	al_logf(AL_LOG_WARN, NULL,
		"idle supervisor: the run left its %s changed; not serving "
		"another",
		what);
}

/* After a run: may this process take another?  Its tree, descriptors
 * and handle are checked (reuse.h); the daemon must still be there. */
static bool may_serve_again(int sock, const al_reuse_state *before,
			    const al_provider_ops *ops,
			    al_provider_handle *handle)
{
	struct pollfd pfd = {sock, POLLIN | POLLRDHUP, 0};
	/* The daemon says nothing while a run goes: anything is its end. */
	if (poll(&pfd, 1, 0) != 0)
		return false;
	if (ops->health != NULL && ops->health(handle, NULL) < 0)
		return false;
	const char *what = settled(handle, before);
	if (what != NULL)
		refuse_another(what);
	return what == NULL;
}

/* "<word> <run id>" to the daemon; false when it did not go. */
static bool tell(int sock, const char *word, const char *run_id)
{
	char msg[80];
	int n = snprintf(msg, sizeof(msg), "%s %s", word, run_id);
	return n > 0 && n < (int)sizeof(msg) &&
	       send(sock, msg, (size_t)n, MSG_NOSIGNAL) == n;
}

/* A warm supervisor's members are made again between its runs, within
 * this (far above what one takes to start; docs/performance.md). */
#define RENEW_MS 10000
_Static_assert(sizeof(((al_reuse_keep *)0)->names[0]) ==
		       AL_SANDBOX_CG_NAME_MAX,
	       "member cgroup names are passed as they are");

/* Before a run of a supervisor that serves several and holds a warm
 * sandbox: its members all made again and ready, so that the state the
 * next run is compared with is the same each time (the members' own
 * descriptors and cgroups included).  false: serve no further run. */
static bool members_ready(const al_provider_ops *ops,
			  al_provider_handle *handle)
{
	if (!reusable_provider(ops))
		return false;
	int rc = al_sandbox_pool_renew(handle, RENEW_MS);
	if (rc < 0 && rc != -ENOENT) {
		al_logf(AL_LOG_WARN, NULL,
			"idle supervisor: its warm sandbox was not made "
			"again (%s); not serving another run",
			strerror(-rc));
		return false;
	}
	return true;
}

/* JSON's memory is wiped as it is freed: the secrets (and the request)
 * of a run pass through it, and the process serves further runs. */
static void json_free_wiped(void *p)
{
	if (p != NULL)
		explicit_bzero(p, malloc_usable_size(p));
	free(p);
}

int al_supervisor_idle_main(const char *state_dir, char *nonce, int sock)
{
	const al_provider_ops *ops = NULL;
	al_provider_handle *handle = NULL;
	char *buf = malloc(IDLE_MSG_MAX);
	int fds[2] = {-1, -1};
	size_t n_fds = 0;
	int rc = 2;
	unsigned runs = 1, served = 0;
	int null_fd = -1;
	sigset_t set;

	block_signals(&set);
	json_set_alloc_funcs(malloc, json_free_wiped);
	if (buf == NULL || !al_nonce_valid(nonce))
		goto out;
	/* Opened before the provider is ensured: a warm sandbox's member is
	 * made meanwhile, and its descriptors must be the same numbers each
	 * time one is made (reuse.h compares them between runs). */
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	/* 1: the provider to ensure, then "ready" (or "failed"). */
	ssize_t n = idle_recv(sock, buf, IDLE_MSG_MAX, fds, 0, &n_fds);
	if (n <= 0) {
		rc = n == 0 ? 0 : 2;
		goto out;
	}
	/* its runs' cgroups live in the durable run's tree: none ahead */
	al_sandbox_cgroups_ahead_off();
	bool ok = idle_ensure(buf, &ops, &handle, &runs) == 0;
	explicit_bzero(buf, (size_t)n);
	if (!reusable_provider(ops))
		runs = 1;
	const char *word = ok ? "ready" : "failed";
	if (send(sock, word, strlen(word), MSG_NOSIGNAL) < 0 || !ok) {
		rc = ok ? 0 : 1;
		goto out;
	}
	if (null_fd < 0)
		runs = 1;
	/* Each run sets it (prepare); none is inherited into the next. */
	unsetenv("AIRLOCK_RUN_BASE");
	al_reuse_state before;
	/* The state the last run was found to have left as it was: the
	 * next one is compared with it again, not with a fresh copy. */
	bool checked = false;
	for (;;) {
		/* 2: "run <id> <nonce>" with the log and the secrets, or the
		 * end of the socket (the daemon is gone: nothing runs). */
		bool again = runs > 1 &&
			     (checked || (members_ready(ops, handle) &&
					  al_reuse_snapshot(&before) == 0));
		n = idle_recv(sock, buf, 256, fds, 2, &n_fds);
		char run_id[64], their[64];
		if (n <= 0 || n_fds < 1 ||
		    sscanf(buf, "run %63s %63s", run_id, their) != 2 ||
		    !al_run_id_valid(run_id) || !al_nonce_valid(their) ||
		    (served == 0 && strcmp(their, nonce) != 0)) {
			rc = n == 0 ? 0 : 2;
			goto out;
		}
		/* Each run has its own nonce: from now on this process is
		 * that run's supervisor, and only that run's. */
		al_reuse_set_nonce(nonce, their);
		served++;
		bool last = !again || served >= runs;
		if (last) {
			close(sock);
			sock = -1;
		}
		if (dup2(fds[0], 1) < 0 || dup2(fds[0], 2) < 0) {
			rc = 1;
			goto out;
		}
		close(fds[0]);
		fds[0] = -1;
		int sec = fds[1];
		fds[1] = -1;
		if (last) {
			free(buf);
			if (null_fd >= 0)
				close(null_fd);
			/* the run's cgroup is the daemon's to end */
			return run_one(state_dir, run_id, nonce, sec, ops, handle,
				       false);
		}
		rc = run_one(state_dir, run_id, nonce, sec, ops, handle, true);
		/* Nothing of the run's environment stays; the checks say
		 * why not in the run's log; then the log goes too. */
		unsetenv("AIRLOCK_RUN_BASE");
		al_reuse_drain_signals();
		/* "ended <id>": its result is recorded and its tree is gone,
		 * so the daemon finishes the run now; a warm sandbox's next
		 * member is made after that, off the run's answer. */
		const char *left = rc == 0 ? settled(handle, NULL) : "result";
		if (rc == 0 && left != NULL)
			refuse_another(left);
		bool more = left == NULL && tell(sock, "ended", run_id) &&
			    members_ready(ops, handle) &&
			    may_serve_again(sock, &before, ops, handle);
		if (dup2(null_fd, 1) < 0 || dup2(null_fd, 2) < 0)
			more = false;
		if (!more) {
			/* Its result is recorded (or it failed): the daemon
			 * ends and removes the cgroup as after any run. */
			if (handle != NULL && ops->release != NULL)
				(void)ops->release(handle, NULL);
			close(sock);
			close(null_fd);
			free(buf);
			return rc;
		}
		/* "done <id>": checked and renewed; the daemon may hand this
		 * process another run. */
		if (!tell(sock, "done", run_id)) {
			rc = 0;
			goto out;
		}
		checked = true;
	}
out:
	for (size_t i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (handle != NULL && ops->release != NULL &&
	    ops->release(handle, NULL) < 0)
		al_logf(AL_LOG_WARN, NULL,
			"idle supervisor: the provider handle did not release");
	if (sock >= 0)
		close(sock);
	if (null_fd >= 0)
		close(null_fd);
	free(buf);
	/* Nothing runs now: leave nothing behind, our cgroup included. */
	(void)al_run_cgroup_leave_idle();
	return rc;
}
