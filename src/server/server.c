/* al_server_run: start-up, signals (SIGHUP reloads, SIGTERM/SIGINT drain
 * and stop), and the graceful shutdown of airlockd (docs/serve.md). */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include <airlock/server.h>

#include "core/log.h"
#include "host/config.h"
#include "host/state_dir.h"
#include "child/artifacts.h"
#include "server/compat.h"
#include "server/http.h"
#include "server/fleet.h"
#include "server/listen.h"
#include "server/service.h"
#include "supervisor/retention.h"
#include "core/util.h"

#define MAX_CONFIG_BYTES (4u * 1024u * 1024u)
#define IDLE_TIMEOUT_S 120u
/* glibc's default mmap threshold, fixed (setting it turns off the
 * adaptive one). */
#define BODY_MMAP_THRESHOLD (128 * 1024)
/* After interrupting, how long runs get to report before we stop anyway. */
#define INTERRUPT_WAIT_MS 30000u
/* How long answers already decided get to reach their clients. */
#define FLUSH_WAIT_MS 5000u
/* WebSocket sessions' end: their close frame and the peer's answer. */
#define WS_END_WAIT_MS 3000u

static int sig_pipe[2] = {-1, -1};

/* Retention (docs/workspaces.md): removes the stored data (run
 * directory, artifact store) of runs finished longer than the
 * configuration's "retention" ago — never a live run's.  Returns the time until the next sweep:
 * half the retention, from 1 s to 1 h. */
static int64_t sweep_artifacts(al_service *svc)
{
	al_srv_gen *gen = al_service_gen_get(svc);
	uint64_t retention_ms = (gen != NULL ? gen->cfg->retention_s
					     : AL_CFG_DEFAULT_RUN_RETENTION_S) *
				1000u;
	al_service_gen_put(svc, gen);
	al_forget_stats st;
	al_error *err = NULL;
	if (al_runs_forget(svc->opts.state_dir, retention_ms, NULL, 0, &st,
			   &err) < 0)
		al_logf(AL_LOG_WARN, NULL, "retention: %s",
			al_error_get_message(err));
	else if (st.removed > 0 || st.failed > 0)
		al_logf(AL_LOG_INFO, NULL,
			"retention: removed the stored data of %zu expired "
			"runs (%zu "
			"could not be removed)",
			st.removed, st.failed);
	al_error_free(err);
	uint64_t next = retention_ms / 2;
	return next < 1000 ? 1000 : next > 3600000 ? 3600000 : (int64_t)next;
}

static void on_signal(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;
	if (write(sig_pipe[1], &b, 1) < 0) {
		/* full pipe: a signal is already pending */
	}
	errno = saved;
}

static int read_file(const char *path, char **out, size_t *len,
		     al_error **err)
{
	int rc, fd = open(path, O_RDONLY | O_CLOEXEC);

	*out = NULL;
	if (fd < 0)
		return al_error_set(err, AL_ERR_INVALID_CONFIG, errno, "$",
				    "cannot open the configuration file: %s",
				    strerror(errno));
	rc = al_read_whole_fd(fd, MAX_CONFIG_BYTES, out, len);
	close(fd);
	if (rc == -EINVAL || rc == -EFBIG)
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, "$",
				    "the configuration must be a regular file "
				    "of at most 4 MiB");
	if (rc < 0)
		return al_error_set(err, AL_ERR_INVALID_CONFIG, -rc, "$",
				    "cannot read the configuration file");
	return 0;
}

/* Builds a configuration generation: configuration, tokens, host.
 * *token_path is set when the generated default token is in use. */
static int load_gen(const al_server_options *o, al_srv_gen **out,
		    char **token_path, al_error **err)
{
	al_srv_gen *gen = calloc(1, sizeof(*gen));
	char *text = NULL;
	size_t len = 0;
	int rc;

	*out = NULL;
	*token_path = NULL;
	if (gen == NULL)
		return -ENOMEM;
	if (o->config_path != NULL) {
		char *merged = NULL;
		size_t mlen = 0;
		if ((rc = read_file(o->config_path, &text, &len, err)) < 0 ||
		    (rc = al_compat_overlay_defaults(text, len, &merged, &mlen,
						     err)) < 0)
			goto out;
		if (merged != NULL) {
			free(text);
			text = merged;
			len = mlen;
		}
		if ((rc = al_config_parse(text, len, &gen->cfg, err)) < 0 ||
		    (rc = al_auth_from_config(text, len, gen->cfg, &gen->auth,
					      err)) < 0 ||
		    (rc = al_compat_cfg_parse(text, len, &gen->compat,
					      err)) < 0)
			goto out;
	} else if ((rc = al_config_default(&gen->cfg, err)) < 0) {
		goto out;
	}
	if (gen->auth == NULL &&
	    (rc = al_auth_default_token(o->state_dir, &gen->auth, token_path,
					err)) < 0)
		goto out;
	al_host_options ho = {.state_dir = o->state_dir};
	if ((rc = al_host_new(gen->cfg, &ho, &gen->host, err)) < 0)
		goto out;
	*out = gen;
	gen = NULL;
out:
	free(text);
	al_srv_gen_free(gen);
	return rc;
}

/* poll(), not select(): select() cannot watch a descriptor numbered past
 * 1023, and libmicrohttpd closes such connections at once.  A thread per
 * connection, because a run's answer or an event stream blocks its
 * handler.  The idle timeout catches a peer gone silent; the guard
 * (conns.c) the one that trickles. */
static struct MHD_Daemon *start_mhd(al_http *h, int fd)
{
	const al_server_options *o = &h->svc->opts;
	return MHD_start_daemon(
		MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_THREAD_PER_CONNECTION |
			MHD_USE_ITC | MHD_ALLOW_UPGRADE,
		0, NULL, NULL, al_http_handle, h, MHD_OPTION_LISTEN_SOCKET, fd,
		MHD_OPTION_CONNECTION_LIMIT, h->max_connections,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		o->max_connections_per_client, MHD_OPTION_CONNECTION_TIMEOUT,
		IDLE_TIMEOUT_S, MHD_OPTION_NOTIFY_CONNECTION, al_conns_notify,
		h->conns, MHD_OPTION_NOTIFY_COMPLETED, al_http_completed, h,
		MHD_OPTION_UNESCAPE_CALLBACK, al_http_unescape, NULL,
		MHD_OPTION_END);
}

/* The connection bound as enforced: half the descriptor limit at most,
 * the other half for runs, supervisors, the database and the logs. */
static unsigned connection_bound(unsigned asked)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return asked;
	rlim_t half = rl.rlim_cur / 2;
	if (half < 1)
		half = 1;
	if ((rlim_t)asked <= half)
		return asked;
	al_logf(AL_LOG_INFO, NULL,
		"at most %u connections per listener (half the descriptor "
		"limit of %llu)",
		(unsigned)half, (unsigned long long)rl.rlim_cur);
	return (unsigned)half;
}

/* Where the generated token of tenant default is (never the token). */
static void log_token_path(const char *path)
{
	al_log_field f[] = {AL_LF_S("tenant", "default"),
			    AL_LF_S("file", path)};
	al_log_fields(AL_LOG_INFO, "token for tenant default", f, 2);
}

static void reload(al_service *svc)
{
	al_srv_gen *gen = NULL;
	al_error *err = NULL;
	char *token_path = NULL;
	if (svc->opts.config_path == NULL) {
		al_logf(AL_LOG_INFO, NULL,
			"SIGHUP: no configuration file to reload");
		return;
	}
	if (load_gen(&svc->opts, &gen, &token_path, &err) < 0) {
		/* Messages name the key path, never a value. */
		al_logf(AL_LOG_WARN, NULL,
			"reload refused, keeping the running configuration: %s",
			al_error_get_message(err)[0] ? al_error_get_message(err)
						     : "out of memory");
		al_error_free(err);
		return;
	}
	al_service_gen_set(svc, gen);
	al_logf(AL_LOG_INFO, NULL, "configuration reloaded");
	if (token_path != NULL)
		log_token_path(token_path);
	free(token_path);
}

/* Waits (lock held) until *count is 0 or the deadline passes. */
static void wait_zero_locked(al_service *svc, const unsigned *count,
			     int64_t deadline_ms)
{
	while (*count > 0) {
		int64_t left = deadline_ms - al_mono_ms();
		if (left <= 0)
			return;
		struct timespec ts;
		al_deadline(CLOCK_REALTIME, &ts, left);
		pthread_cond_timedwait(&svc->idle, &svc->lock, &ts);
	}
}

/* Stop accepting, let runs finish up to the grace, interrupt the rest,
 * then end every open stream.  Returns true when every worker ended. */
static bool drain(al_service *svc, struct MHD_Daemon **d, int *fds, int n)
{
	pthread_mutex_lock(&svc->lock);
	svc->draining = true;
	unsigned active = svc->active;
	pthread_mutex_unlock(&svc->lock);
	for (int i = 0; i < n; i++) {
		/* Our own listen socket comes back; closing it refuses new
		 * connections while open ones finish. */
		MHD_socket s = MHD_quiesce_daemon(d[i]);
		if (s != MHD_INVALID_SOCKET && s == fds[i]) {
			close(fds[i]);
			fds[i] = -1;
		}
	}
	if (active > 0)
		al_logf(AL_LOG_INFO, NULL,
			"stopping: waiting up to %u ms for %u run(s)",
			svc->opts.shutdown_grace_ms, active);
	pthread_mutex_lock(&svc->lock);
	wait_zero_locked(svc, &svc->active,
			 al_mono_ms() + svc->opts.shutdown_grace_ms);
	active = svc->active;
	pthread_mutex_unlock(&svc->lock);
	if (active > 0) {
		al_logf(AL_LOG_INFO, NULL, "interrupting %u run(s)", active);
		al_service_interrupt_all(svc);
	}
	pthread_mutex_lock(&svc->lock);
	wait_zero_locked(svc, &svc->workers, al_mono_ms() + INTERRUPT_WAIT_MS);
	bool all = svc->workers == 0;
	svc->closing = true;
	for (al_srv_run *r = svc->newest; r != NULL; r = r->older)
		pthread_cond_broadcast(&r->changed);
	/* Waiters and event streams now end; let their answers go out. */
	wait_zero_locked(svc, &svc->requests, al_mono_ms() + FLUSH_WAIT_MS);
	pthread_mutex_unlock(&svc->lock);
	return all;
}

static void fill_defaults(al_server_options *o)
{
	if (o->listen_addr == NULL && o->unix_socket == NULL)
		o->listen_addr = AL_SERVER_DEFAULT_LISTEN;
	if (o->max_body_bytes == 0)
		o->max_body_bytes = AL_SERVER_DEFAULT_MAX_BODY;
	if (o->max_connections == 0)
		o->max_connections = AL_SERVER_DEFAULT_MAX_CONNECTIONS;
	if (o->max_connections_per_client == 0)
		o->max_connections_per_client =
			AL_SERVER_DEFAULT_MAX_CONNECTIONS_PER_CLIENT;
	if (o->header_timeout_ms == 0)
		o->header_timeout_ms = AL_SERVER_DEFAULT_HEADER_TIMEOUT_MS;
	if (o->body_timeout_ms == 0)
		o->body_timeout_ms = AL_SERVER_DEFAULT_BODY_TIMEOUT_MS;
	if (o->shutdown_grace_ms == 0)
		o->shutdown_grace_ms = AL_SERVER_DEFAULT_GRACE_MS;
}

int al_server_run(const al_server_options *opts, al_error **err)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	struct sigaction old[3], sa = {0};
	al_server_options o = *opts;
	al_service *svc = calloc(1, sizeof(*svc));
	al_srv_gen *gen = NULL;
	struct MHD_Daemon *d[2] = {NULL, NULL};
	al_http front = {.svc = svc};
	int fds[2] = {-1, -1}, n = 0, rc;
	char *token_path = NULL, shown[128] = "";
	bool handlers = false, svc_ok = false, clean = true, unix_bound = false;

	fill_defaults(&o);
	if (svc == NULL)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	if (o.state_dir == NULL || o.state_dir[0] == '\0') {
		rc = al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL,
				  "state_dir", "a state directory is required");
		goto out;
	}
	if (mkdir(o.state_dir, 0700) < 0 && errno != EEXIST) {
		rc = al_error_set(err, AL_ERR_IO, errno, "state_dir",
				  "cannot create the state directory: %s",
				  strerror(errno));
		goto out;
	}
	/* Before anything is read from it or written to it (the token). */
	if ((rc = al_state_dir_check(o.state_dir, err)) < 0)
		goto out;
	if ((rc = al_service_init(svc, &o)) < 0)
		goto out;
	svc_ok = true;
	if ((rc = load_gen(&o, &gen, &token_path, err)) < 0)
		goto out;
	al_service_gen_set(svc, gen);
	gen = NULL;
	/* Runs outlive the daemon: take the next epoch, then classify what
	 * an earlier daemon left (docs/durability.md) before serving. */
	if ((rc = al_durable_open(o.state_dir, &svc->durable, err)) < 0 ||
	    (rc = al_service_recover(svc)) < 0 ||
	    (rc = al_service_idle_start(svc)) < 0 ||
	    (rc = al_fleet_start(svc, err)) < 0) {
		if (rc != 0 && err != NULL && *err == NULL)
			rc = al_error_set(err, AL_ERR_IO, -rc, "state_dir",
					  "cannot recover the runs: %s",
					  strerror(-rc));
		goto out;
	}

	if (o.listen_addr != NULL &&
	    (rc = al_listen_tcp(o.listen_addr, &fds[n++], shown,
				sizeof(shown), err)) < 0)
		goto out;
	if (o.unix_socket != NULL) {
		if ((rc = al_listen_unix(o.unix_socket, &fds[n++], err)) < 0)
			goto out;
		unix_bound = true;
	}

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		rc = al_error_set(err, AL_ERR_IO, errno, "signals",
				  "cannot create the signal pipe");
		goto out;
	}
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	handlers = true;

	/* Large request bodies are served from their own mappings, given
	 * back when freed: glibc's adaptive threshold would otherwise move
	 * them into arenas whose memory stays with the process. */
	mallopt(M_MMAP_THRESHOLD, BODY_MMAP_THRESHOLD);
	front.max_connections = connection_bound(o.max_connections);
	if ((rc = al_conns_new(o.header_timeout_ms, o.body_timeout_ms,
			       &front.conns)) < 0) {
		rc = al_error_set(err, AL_ERR_IO, -rc, "listen",
				  "cannot start the connection guard");
		goto out;
	}
	for (int i = 0; i < n; i++)
		if ((d[i] = start_mhd(&front, fds[i])) == NULL) {
			rc = al_error_set(err, AL_ERR_IO, EIO, "listen",
					  "cannot start the HTTP server");
			goto out;
		}
	/* The token's file before "listening on": whoever waits for that
	 * line (a supervisor, a test) has read where the token is too. */
	if (token_path != NULL)
		log_token_path(token_path);
	if (o.listen_addr != NULL)
		al_logf(AL_LOG_INFO | AL_LOG_ALWAYS, NULL, "listening on %s", shown);
	if (o.unix_socket != NULL)
		al_logf(AL_LOG_INFO | AL_LOG_ALWAYS, NULL, "listening on unix:%s",
			o.unix_socket);

	int64_t next_sweep = al_mono_ms() + sweep_artifacts(svc);
	for (;;) {
		struct pollfd pfd = {.fd = sig_pipe[0], .events = POLLIN};
		unsigned char sig;
		int64_t wait = next_sweep - al_mono_ms();
		if (wait <= 0) {
			next_sweep = al_mono_ms() + sweep_artifacts(svc);
			continue;
		}
		if (poll(&pfd, 1, (int)wait) < 0 && errno != EINTR)
			break;
		if (read(sig_pipe[0], &sig, 1) != 1)
			continue;
		if (sig == SIGHUP) {
			reload(svc);
			continue;
		}
		al_logf(AL_LOG_INFO, NULL, "%s: shutting down",
			sig == SIGTERM ? "SIGTERM" : "SIGINT");
		break;
	}
	al_fleet_stop(svc);
	clean = drain(svc, d, fds, n);
	rc = 0;
out:
	/* WebSocket sessions hold libmicrohttpd's upgrade handles. */
	if (svc_ok && !al_compat_ws_end(WS_END_WAIT_MS))
		clean = false;
	for (int i = 0; i < 2; i++) {
		if (d[i] != NULL)
			MHD_stop_daemon(d[i]);
		if (fds[i] >= 0)
			close(fds[i]);
	}
	al_conns_free(front.conns);
	if (unix_bound)
		unlink(o.unix_socket);
	if (handlers)
		for (int i = 0; i < 3; i++)
			sigaction(sigs[i], &old[i], NULL);
	for (int i = 0; i < 2; i++)
		if (sig_pipe[i] >= 0) {
			close(sig_pipe[i]);
			sig_pipe[i] = -1;
		}
	free(token_path);
	/* The fleet's claimed runs record their results first. */
	if (svc_ok && !al_fleet_free(svc))
		clean = false;
	if (svc_ok && clean) {
		al_service_destroy(svc);
		free(svc);
	} else if (svc_ok) {
		/* Live workers still use the service: it is left to them. */
		al_logf(AL_LOG_WARN, NULL,
			"some runs did not end after the interrupt; exiting "
			"without waiting");
	} else {
		free(svc);
	}
	if (rc == 0)
		al_logf(AL_LOG_INFO, NULL, "stopped");
	return al_error_wrap(err, rc, NULL);
}
