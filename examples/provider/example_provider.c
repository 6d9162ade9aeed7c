/* example-local: see example_provider.h.  Uses only <airlock/...> headers
 * and libc (plus jansson for its configuration). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <airlock/provider.h>

#include "example_provider.h"

#define EX_ID "example-local"
#define EX_SHELL "/bin/sh"
#define EX_LIMITS                                                            \
	(AL_LIMIT_WALL_MS | AL_LIMIT_CPU_MS | AL_LIMIT_OUTPUT_BYTES |        \
	 AL_LIMIT_FILE_BYTES | AL_LIMIT_OPEN_FILES)

/* ---- configuration ----------------------------------------------------- */

typedef struct ex_config {
	bool fail_release;
} ex_config;

static int parse_config(const char *text, ex_config *cfg, al_error **err)
{
	memset(cfg, 0, sizeof(*cfg));
	if (text == NULL || *text == '\0')
		return 0;
	json_error_t je;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	int rc = 0;
	if (root == NULL || !json_is_object(root)) {
		rc = al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, "config",
				  "the configuration must be a JSON object");
		goto out;
	}
	const char *key;
	json_t *v;
	json_object_foreach(root, key, v)
	{
		if (strcmp(key, "fail_release") == 0 && json_is_boolean(v)) {
			cfg->fail_release = json_is_true(v);
		} else {
			rc = al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL,
					  key, "unknown or mistyped key");
			goto out;
		}
	}
out:
	json_decref(root);
	return rc;
}

/* ---- probe / ensure / health / release ----------------------------------- */

static int ex_probe(const char *config_json, al_facts **out, al_error **err)
{
	ex_config cfg;
	char real[PATH_MAX];
	if (parse_config(config_json, &cfg, err) < 0)
		return -EINVAL;
	al_facts *f = al_facts_new(EX_ID, AL_SAFETY_TRUSTED_LOCAL);
	if (f == NULL)
		return -ENOMEM;
	/* Observed, not assumed: the shell must exist and be executable. */
	if (realpath(EX_SHELL, real) == NULL || access(real, X_OK) != 0) {
		f->available = false;
		f->unavailable_reason = strdup("sh_absent");
		if (f->unavailable_reason == NULL)
			goto oom;
		*out = f;
		return 0;
	}
	f->available = true;
	/* A shell's version is not something a program can print; the
	 * contract allows it to be unknown. */
	if (al_facts_add_language(f, "sh", "sh", NULL, real) < 0)
		goto oom;
	f->limits = EX_LIMITS;
	f->network = 1u << AL_NETWORK_HOST; /* it restricts no network */
	f->workspace = 1u << AL_WORKSPACE_RW;
	f->streaming = true;
	*out = f;
	return 0;
oom:
	al_facts_free(f);
	return -ENOMEM;
}

typedef struct live_run {
	char run_id[40];
	al_cancel *cancel;
	struct live_run *next;
} live_run;

struct al_provider_handle {
	pthread_mutex_t lock; /* guards runs */
	live_run *runs;
	ex_config cfg;
};

static int ex_ensure(const char *config_json, al_provider_handle **out,
		     al_error **err)
{
	ex_config cfg;
	if (parse_config(config_json, &cfg, err) < 0)
		return -EINVAL;
	al_provider_handle *h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	h->cfg = cfg;
	*out = h;
	return 0;
}

static int ex_health(al_provider_handle *h, al_error **err)
{
	(void)h;
	if (access(EX_SHELL, X_OK) != 0)
		return al_error_set(err, AL_ERR_UNAVAILABLE, errno, NULL,
				    "the shell is gone");
	return 0;
}

static int ex_release(al_provider_handle *h, al_error **err)
{
	int rc = 0;
	pthread_mutex_lock(&h->lock);
	bool busy = h->runs != NULL;
	pthread_mutex_unlock(&h->lock);
	if (busy)
		return al_error_set(err, AL_ERR_INTERNAL, EBUSY, NULL,
				    "runs are still live on this handle");
	if (h->cfg.fail_release)
		rc = al_error_set(err, AL_ERR_INTERNAL, EIO, NULL,
				  "release failed (configured to fail)");
	pthread_mutex_destroy(&h->lock);
	free(h);
	return rc;
}

static int ex_interrupt(al_provider_handle *h, const char *run_id,
			al_error **err)
{
	int rc = -ESRCH;
	pthread_mutex_lock(&h->lock);
	for (live_run *r = h->runs; r != NULL; r = r->next) {
		if (strcmp(r->run_id, run_id) == 0) {
			/* The execute loop watches this token. */
			al_cancel_fire(r->cancel, AL_CANCEL_INTERRUPTED);
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&h->lock);
	if (rc < 0)
		return al_error_set(err, AL_ERR_NOT_FOUND, ESRCH, NULL,
				    "no such live run");
	return 0;
}

/* ---- the run directory ------------------------------------------------- */

typedef struct run_dir {
	char root[64];
	char code[96], workspace[96], tmp[96], script[128];
} run_dir;

static int rm_entry(const char *p, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p) < 0 ? -1 : 0;
}

static int run_dir_create(run_dir *d, const al_bytes *code)
{
	snprintf(d->root, sizeof(d->root), "/tmp/example-local-XXXXXX");
	if (mkdtemp(d->root) == NULL) {
		d->root[0] = '\0';
		return -errno;
	}
	snprintf(d->code, sizeof(d->code), "%s/code", d->root);
	snprintf(d->workspace, sizeof(d->workspace), "%s/workspace", d->root);
	snprintf(d->tmp, sizeof(d->tmp), "%s/tmp", d->root);
	snprintf(d->script, sizeof(d->script), "%s/main.sh", d->code);
	if (mkdir(d->code, 0700) < 0 || mkdir(d->workspace, 0700) < 0 ||
	    mkdir(d->tmp, 0700) < 0)
		return -errno;
	/* The program's code is the request's bytes, written by us. */
	int fd = open(d->script, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
	if (fd < 0)
		return -errno;
	size_t off = 0;
	while (off < code->len) {
		ssize_t n = write(fd, code->data + off, code->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			close(fd);
			return -EIO;
		}
		off += (size_t)n;
	}
	return close(fd) < 0 ? -errno : 0;
}

static void run_dir_remove(run_dir *d)
{
	if (d->root[0] != '\0')
		nftw(d->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- environment --------------------------------------------------------- */

static char *fmt(const char *a, const char *b)
{
	char *s = NULL;
	return asprintf(&s, "%s=%s", a, b) < 0 ? NULL : s;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

/* Only what the contract lists, then the request's env and host_env. */
static char **build_env(const al_exec *ex, const run_dir *d)
{
	const al_request *req = ex->request;
	size_t n = 6 + req->n_env + ex->n_host_env, i = 0;
	char **env = calloc(n + 1, sizeof(*env));
	if (env == NULL)
		return NULL;
	env[i++] = strdup("PATH=/usr/local/bin:/usr/bin:/bin");
	env[i++] = strdup("LANG=C.UTF-8");
	env[i++] = fmt("HOME", d->workspace);
	env[i++] = fmt("TMPDIR", d->tmp);
	env[i++] = fmt("AIRLOCK_RUN_TEMP", d->tmp);
	env[i++] = fmt("AIRLOCK_RUN_ID", ex->run_id);
	for (size_t j = 0; j < req->n_env; j++)
		env[i++] = fmt(req->env[j].name, req->env[j].value);
	for (size_t j = 0; j < ex->n_host_env; j++)
		env[i++] = strdup(ex->host_env[j]);
	for (size_t j = 0; j < i; j++) {
		if (env[j] == NULL) {
			strv_free(env);
			return NULL;
		}
	}
	return env;
}

/* ---- the shepherd ---------------------------------------------------------- */

typedef struct ex_report {
	int status; /* of the program, from waitpid */
	struct rusage ru;
} ex_report;

/* Kills every process the shepherd can reach: the program's group and
 * whatever was reparented to it (it is a child subreaper), until none is
 * left to reap. */
static void kill_tree(pid_t pgid, pid_t program, ex_report *rep,
		      bool *have_status)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%ld/children",
		 (long)getpid());
	for (;;) {
		kill(-pgid, SIGKILL);
		/* No stdio here: the shepherd is a fork of a threaded host,
		 * and a malloc could wait forever on a lock another thread
		 * held at the fork (seen under ASan).  A stack buffer; pids
		 * past it are reached on the next pass. */
		char buf[4096];
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = '\0';
		/* A full buffer may end inside a pid: drop that part. */
		if (n == (ssize_t)sizeof(buf) - 1) {
			char *last = strrchr(buf, ' ');
			*(last != NULL ? last : buf) = '\0';
		}
		for (char *p = buf, *end; *p != '\0'; p = end) {
			long pid = strtol(p, &end, 10);
			if (end == p)
				break;
			if (pid > 0)
				kill((pid_t)pid, SIGKILL);
		}
		int st;
		struct rusage ru;
		pid_t got = wait4(-1, &st, 0, &ru);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return; /* ECHILD: nothing left */
		if (got == program && !*have_status) {
			rep->status = st;
			rep->ru = ru;
			*have_status = true;
		}
	}
}

/* The shepherd does not exec, so close-on-exec does not protect it:
 * close every descriptor it inherited (other runs' pipes included)
 * except the ones it needs. */
static void close_except(const int *keep, size_t n)
{
	int lo = 3;
	for (;;) {
		int next = -1;
		for (size_t i = 0; i < n; i++)
			if (keep[i] >= lo && (next < 0 || keep[i] < next))
				next = keep[i];
		if (next < 0) {
			close_range((unsigned)lo, ~0u, 0);
			return;
		}
		if (next > lo)
			close_range((unsigned)lo, (unsigned)next - 1, 0);
		lo = next + 1;
	}
}

/* In the shepherd: start the program, forward TERM to its tree, and on
 * USR1 (or when the program ends) kill the whole tree and report. */
static void shepherd(const run_dir *d, char **argv, char **envp,
		     const al_limits *l,
		     int in_fd, int out_fd, int err_fd, int status_fd)
{
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, &old);
	const int keep[] = {in_fd, out_fd, err_fd, status_fd};
	close_except(keep, 4);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (setsid() < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) < 0 || sfd < 0)
		_exit(126);

	pid_t program = fork();
	if (program < 0)
		_exit(126);
	if (program == 0) {
		setpgid(0, 0);
		sigprocmask(SIG_SETMASK, &old, NULL);
		struct rlimit core = {0, 0},
			      nofile = {l->open_files, l->open_files};
		setrlimit(RLIMIT_CORE, &core);
		setrlimit(RLIMIT_NOFILE, &nofile);
		if (l->file_bytes > 0) {
			struct rlimit fs = {l->file_bytes, l->file_bytes};
			setrlimit(RLIMIT_FSIZE, &fs);
		}
		if (l->cpu_ms > 0) {
			/* SIGXCPU at the soft limit; the hard one backs it. */
			rlim_t s = (l->cpu_ms + 999) / 1000;
			struct rlimit cpu = {s, s + 1};
			setrlimit(RLIMIT_CPU, &cpu);
		}
		if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 ||
		    dup2(err_fd, 2) < 0 || chdir(d->workspace) < 0)
			_exit(126);
		execve(EX_SHELL, argv, envp);
		_exit(127);
	}
	setpgid(program, program); /* either side may win the race */
	close(in_fd);
	close(out_fd);
	close(err_fd);

	ex_report rep;
	memset(&rep, 0, sizeof(rep));
	bool have_status = false;
	while (!have_status) {
		struct signalfd_siginfo si;
		if (read(sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGTERM) {
			kill(-program, SIGTERM);
		} else if (si.ssi_signo == SIGUSR1) {
			break;
		} else { /* SIGCHLD: reap; the program's end ends the run */
			int st;
			struct rusage ru;
			pid_t got;
			while ((got = wait4(-1, &st, WNOHANG, &ru)) > 0) {
				if (got == program) {
					rep.status = st;
					rep.ru = ru;
					have_status = true;
				}
			}
		}
	}
	kill_tree(program, program, &rep, &have_status);
	if (!have_status)
		rep.status = SIGKILL; /* as a wait status: killed by KILL */
	ssize_t w = write(status_fd, &rep, sizeof(rep));
	_exit(w == (ssize_t)sizeof(rep) ? 0 : 125);
}

/* ---- execute ------------------------------------------------------------- */

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

typedef struct stream {
	int fd;
	al_bytes *keep;
	uint64_t cap, seen;
	bool truncated;
} stream;

/* Reads what is there; keeps up to the cap, counts everything.  Returns
 * false at EOF. */
static bool drain(stream *s, int which, const al_exec *ex, bool streaming)
{
	unsigned char buf[65536];
	ssize_t n = read(s->fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	if (streaming && ex->on_output != NULL)
		ex->on_output(ex->on_output_ctx, which, buf, (size_t)n);
	s->seen += (uint64_t)n;
	size_t room = s->keep->len < s->cap ? (size_t)(s->cap - s->keep->len) : 0;
	size_t take = (size_t)n < room ? (size_t)n : room;
	if (take < (size_t)n)
		s->truncated = true;
	if (take > 0) {
		unsigned char *grown = realloc(s->keep->data, s->keep->len + take + 1);
		if (grown == NULL) {
			s->truncated = true;
			return true;
		}
		memcpy(grown + s->keep->len, buf, take);
		s->keep->data = grown;
		s->keep->len += take;
		grown[s->keep->len] = '\0';
	}
	return true;
}

/* A program that exits without reading its stdin must not kill the
 * caller's process with SIGPIPE: block it for this thread around the
 * write and consume the one it raised. */
static ssize_t write_no_sigpipe(int fd, const void *buf, size_t len)
{
	sigset_t pipe_set, old;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	ssize_t w = write(fd, buf, len);
	int saved = errno;
	if (w < 0 && errno == EPIPE) {
		struct timespec zero = {0, 0};
		sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = saved;
	return w;
}

static int refuse(al_result *res, al_outcome o, const char *why)
{
	res->finished_at_ms = al_now_ms();
	return al_result_set_outcome(res, o, why);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int ex_execute(al_provider_handle *h, const al_exec *ex, al_result *res,
		      al_error **err)
{
	const al_request *req = ex->request;
	const al_limits *l = &req->limits;
	run_dir d;
	char **envp = NULL;
	char **argv = NULL; /* borrows its strings */
	int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1},
	    stp[2] = {-1, -1};
	pid_t sh = -1;
	int rc = 0;
	live_run me;

	memset(&d, 0, sizeof(d));
	snprintf(res->run_id, sizeof(res->run_id), "%s", ex->run_id);
	res->started_at_ms = al_now_ms();

	/* Refusals first: nothing is created for them. */
	if (req->language == NULL || strcmp(req->language, "sh") != 0)
		return refuse(res, AL_OUTCOME_UNSUPPORTED_LANGUAGE, NULL);
	unsigned extra = l->set & ~(unsigned)EX_LIMITS;
	if (extra != 0)
		return refuse(res, AL_OUTCOME_UNENFORCEABLE_LIMIT,
			      al_limit_name(extra & (~extra + 1u)));
	if (req->grant.network != AL_NETWORK_HOST)
		return refuse(res, AL_OUTCOME_UNENFORCEABLE_LIMIT,
			      "grant.network");
	if (req->grant.workspace != AL_WORKSPACE_RW)
		return refuse(res, AL_OUTCOME_UNENFORCEABLE_LIMIT,
			      "grant.workspace");

	if (run_dir_create(&d, &req->code) < 0) {
		rc = refuse(res, AL_OUTCOME_UNAVAILABLE,
			    "workspace_setup_failed");
		goto out;
	}
	envp = build_env(ex, &d);
	/* sh <script> <args...>: the code is a file we wrote, never a
	 * path from the request. */
	argv = calloc(req->argc + 3, sizeof(*argv));
	if (argv != NULL) {
		argv[0] = (char *)"sh";
		argv[1] = d.script;
		for (size_t i = 0; i < req->argc; i++)
			argv[i + 2] = req->argv[i];
	}
	bool feed = req->has_stdin && req->stdin_data.len > 0;
	if (envp == NULL || argv == NULL || pipe2(out, O_CLOEXEC) < 0 ||
	    pipe2(er, O_CLOEXEC) < 0 || pipe2(stp, O_CLOEXEC) < 0) {
		rc = refuse(res, AL_OUTCOME_UNAVAILABLE, "start_failed");
		goto out;
	}
	/* No stdin: /dev/null, so a read sees EOF at once. */
	if (feed ? pipe2(in, O_CLOEXEC) < 0
		 : (in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		rc = refuse(res, AL_OUTCOME_UNAVAILABLE, "start_failed");
		goto out;
	}

	memset(&me, 0, sizeof(me));
	snprintf(me.run_id, sizeof(me.run_id), "%s", ex->run_id);
	me.cancel = ex->cancel;
	pthread_mutex_lock(&h->lock);
	me.next = h->runs;
	/* Listed only while this call runs: unlisted before it returns. */
	// cppcheck-suppress autoVariables
	h->runs = &me;
	pthread_mutex_unlock(&h->lock);

	uint64_t t0 = mono_ms();
	sh = fork();
	if (sh == 0) {
		close(stp[0]);
		close(out[0]);
		close(er[0]);
		if (in[1] >= 0)
			close(in[1]);
		shepherd(&d, argv, envp, l, in[0], out[1], er[1], stp[1]);
	}
	close_fd(&in[0]);
	close_fd(&out[1]);
	close_fd(&er[1]);
	close_fd(&stp[1]);
	if (sh < 0) {
		rc = refuse(res, AL_OUTCOME_UNAVAILABLE, "start_failed");
		goto unlist;
	}
	if (in[1] >= 0)
		fcntl(in[1], F_SETFL, O_NONBLOCK);

	stream so = {out[0], &res->output[AL_STDOUT], l->output_bytes, 0, false};
	stream se = {er[0], &res->output[AL_STDERR], l->output_bytes, 0, false};
	out[0] = er[0] = -1; /* the streams own them now: close once */
	size_t in_off = 0;
	ex_report rep;
	bool have_rep = false, st_open = true;
	al_outcome ended = AL_OUTCOME__COUNT; /* none: the program's own */
	uint64_t deadline = t0 + l->wall_ms, kill_at = 0;
	bool termed = false, killed = false;

	while (so.fd >= 0 || se.fd >= 0 || st_open) {
		struct pollfd p[5];
		int np = 0, i_out = -1, i_err = -1, i_st = -1, i_in = -1;
		if (so.fd >= 0)
			p[i_out = np++] = (struct pollfd){so.fd, POLLIN, 0};
		if (se.fd >= 0)
			p[i_err = np++] = (struct pollfd){se.fd, POLLIN, 0};
		if (st_open)
			p[i_st = np++] = (struct pollfd){stp[0], POLLIN, 0};
		if (in[1] >= 0)
			p[i_in = np++] = (struct pollfd){in[1], POLLOUT, 0};
		if (!termed)
			p[np++] = (struct pollfd){al_cancel_fd(ex->cancel),
							POLLIN, 0};
		uint64_t now = mono_ms();
		uint64_t next = termed ? kill_at : deadline;
		int timeout = killed ? 1000
				     : (next > now ? (int)(next - now) : 0);
		int n = poll(p, (nfds_t)np, timeout);
		if (n < 0 && errno != EINTR) {
			rc = al_error_set(err, AL_ERR_INTERNAL, errno, NULL,
					  "poll failed");
			break;
		}
		now = mono_ms();
		al_cancel_kind ck = al_cancel_state(ex->cancel);
		if (!termed && (now >= deadline || ck != AL_CANCEL_NONE)) {
			ended = ck == AL_CANCEL_INTERRUPTED ? AL_OUTCOME_INTERRUPTED
				: ck == AL_CANCEL_CANCELLED ? AL_OUTCOME_CANCELLED
							    : AL_OUTCOME_TIMED_OUT;
			kill(sh, SIGTERM); /* forwarded to the tree */
			termed = true;
			kill_at = now + AL_DEFAULT_GRACE_MS;
		} else if (termed && !killed && now >= kill_at) {
			kill(sh, SIGUSR1); /* kill the whole tree */
			killed = true;
		}
		if (n <= 0)
			continue;
		if (i_out >= 0 && p[i_out].revents && !drain(&so, AL_STDOUT, ex, req->grant.streaming))
			close_fd(&so.fd);
		if (i_err >= 0 && p[i_err].revents && !drain(&se, AL_STDERR, ex, req->grant.streaming))
			close_fd(&se.fd);
		if (i_in >= 0 && p[i_in].revents) {
			ssize_t w = write_no_sigpipe(in[1],
						     req->stdin_data.data + in_off,
						     req->stdin_data.len - in_off);
			if (w > 0)
				in_off += (size_t)w;
			if ((w < 0 && errno != EAGAIN && errno != EINTR) ||
			    in_off == req->stdin_data.len)
				close_fd(&in[1]); /* EOF for the program */
		}
		if (i_st >= 0 && p[i_st].revents) {
			ssize_t r = read(stp[0], &rep, sizeof(rep));
			if (r == (ssize_t)sizeof(rep))
				have_rep = true;
			else if (r == 0 || (r < 0 && errno != EINTR))
				st_open = false;
		}
	}
	close_fd(&in[1]);
	close_fd(&so.fd);
	close_fd(&se.fd);
	int sst;
	while (waitpid(sh, &sst, 0) < 0 && errno == EINTR)
		;

	res->output_seen[AL_STDOUT] = so.seen;
	res->output_seen[AL_STDERR] = se.seen;
	res->truncated[AL_STDOUT] = so.truncated;
	res->truncated[AL_STDERR] = se.truncated;
	res->usage.wall_ms = mono_ms() - t0;
	if (have_rep) {
		res->usage.cpu_user_ms = (uint64_t)rep.ru.ru_utime.tv_sec * 1000 +
					 (uint64_t)rep.ru.ru_utime.tv_usec / 1000;
		res->usage.cpu_sys_ms = (uint64_t)rep.ru.ru_stime.tv_sec * 1000 +
					(uint64_t)rep.ru.ru_stime.tv_usec / 1000;
		res->usage.peak_memory_bytes = (uint64_t)rep.ru.ru_maxrss * 1024;
	}
	if (rc < 0)
		goto unlist;
	if (ended != AL_OUTCOME__COUNT) {
		rc = al_result_set_outcome(res, ended, NULL);
		if (ended == AL_OUTCOME_INTERRUPTED && have_rep &&
		    WIFSIGNALED(rep.status)) {
			res->has_signal = true;
			res->signal = WTERMSIG(rep.status);
		}
	} else if (!have_rep) {
		rc = al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					   "start_failed");
		/* A refusal carries no process fields. */
		res->output_seen[0] = res->output_seen[1] = 0;
		res->output[0].len = res->output[1].len = 0;
		res->truncated[0] = res->truncated[1] = false;
	} else if (WIFEXITED(rep.status)) {
		int code = WEXITSTATUS(rep.status);
		rc = al_result_set_outcome(res, code == 0 ? AL_OUTCOME_COMPLETED
							  : AL_OUTCOME_FAILED,
					   NULL);
		res->has_exit_code = true;
		res->exit_code = code;
	} else {
		int sig = WTERMSIG(rep.status);
		rc = al_result_set_outcome(res, AL_OUTCOME_KILLED,
					   sig == SIGXCPU   ? "cpu_limit"
					   : sig == SIGXFSZ ? "file_size_limit"
							    : "signal");
		res->has_signal = true;
		res->signal = sig;
	}
unlist:
	pthread_mutex_lock(&h->lock);
	for (live_run **pp = &h->runs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == &me) {
			*pp = me.next;
			break;
		}
	}
	pthread_mutex_unlock(&h->lock);
out:
	for (int i = 0; i < 2; i++) {
		close_fd(&in[i]);
		close_fd(&out[i]);
		close_fd(&er[i]);
		close_fd(&stp[i]);
	}
	strv_free(envp);
	free(argv);
	run_dir_remove(&d);
	res->finished_at_ms = al_now_ms();
	return rc;
}

const al_provider_ops example_provider_ops = {
	AL_ABI_HEADER(al_provider_ops),
	.id = EX_ID,
	.probe = ex_probe,
	.ensure = ex_ensure,
	.health = ex_health,
	.execute = ex_execute,
	.interrupt = ex_interrupt,
	.release = ex_release,
};
