/* Interactive runs over a WebSocket (docs/compat.md, docs/api.md):
 * Piston's /api/v2/connect protocol, and the same session for airlock's
 * own API on /v1/connect.  libmicrohttpd answers the upgrade on its own
 * listener (so the same address, limits and authentication apply) and
 * hands over the socket; libwslay (Debian's libwslay) does the framing.
 * libwebsockets was not used: it runs its own listener and event loop
 * and cannot take over a connection libmicrohttpd has already parsed.
 *
 * Protocol (Piston's): the client sends {"type": "init", ...execute
 * fields} within a second (else close 4001); the server answers
 * {"type": "runtime"}, then {"type": "stage"}, {"type": "data", "stream",
 * "data"} as output arrives, {"type": "exit", "stage", "code", "signal"},
 * and closes 4999 "Job Completed".  {"type": "signal", "signal": "SIG…"}
 * ends the run (airlock interrupts it, then kills its tree after the
 * grace).  A Piston run is interactive (unless its init says
 * "stdin_stream": false), a /v1 one when its init says "stdin_stream":
 * true: its stdin is a live stream (the init's stdin first, then each
 * {"type": "data", "stream": "stdin"}; {"type": "data", "stream":
 * "stdin", "eof": true} or the socket's close ends it).  Otherwise live
 * stdin is refused with an error and close 4002, as is a frame over
 * STDIN_FRAME_MAX.  Close codes: 4000 already
 * initialized, 4001 initialization timeout, 4002 notified error, 4003
 * not yet initialized, 4004 only stdin may be written, 4005 invalid
 * signal, 4999 job completed. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <nettle/sha1.h>
#include <wslay/wslay.h>

#include <airlock/json.h>

#include "core/util.h"
#include "host/config.h"
#include "json/base64.h"
#include "server/compat_piston.h"
#include "server/http.h"

#define INIT_TIMEOUT_MS 1000
#define CLOSE_WAIT_MS 5000
/* While the daemon stops, a peer gets this long to answer the close. */
#define STOP_CLOSE_WAIT_MS 500
#define MAX_MSG_BYTES (8u << 20)
/* One stdin message's data at most.  The socket is not read while stdin
 * is buffered (the program's pipe is full): a slow program makes the
 * client wait, and a session never holds more than the init's stdin and
 * the messages of one read. */
#define STDIN_FRAME_MAX (64u * 1024u)

typedef struct ws_session {
	struct ws_session *next_pending; /* until the upgrade takes it */
	al_service *svc;
	al_compat_kind kind;
	char tenant[256], principal[24];
	int fd;
	struct MHD_UpgradeResponseHandle *urh;
	unsigned char *extra;
	size_t extra_len, extra_off;
	wslay_event_context_ptr ctx;
	bool inited, finished, close_queued, close_sent;
	uint16_t close_code;
	char close_reason[64];
	al_srv_run *run;
	const al_compat_lang *lang;
	char version[64];
	bool live; /* output goes out as it arrives */
	/* A compiled run's compile stage went out (when its build ended):
	 * its run output may follow live. */
	bool compile_sent;
	uint64_t next_seq;
	unsigned char carry[2][4]; /* a UTF-8 sequence cut by a chunk */
	size_t carry_len[2];
	int64_t t0_ms, close_at_ms;
	/* An interactive run's stdin not yet in its pipe: in[in_off,
	 * in_len); stdin_eof: the client ended it. */
	bool interactive, stdin_eof;
	unsigned char *in;
	size_t in_len, in_off;
} ws_session;

static pthread_mutex_t ws_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ws_cond = PTHREAD_COND_INITIALIZER;
static unsigned ws_active;
/* Sessions whose 101 is queued but whose upgrade has not happened: a
 * peer gone before it never reaches the handler, so they are freed at
 * teardown. */
static ws_session *ws_pending;
/* Shutdown (al_compat_ws_end): ws_stopping ends every session at once;
 * ws_daemon_gone means libmicrohttpd is stopping, so an upgrade handle
 * may no longer be used, and ws_in_action counts the sessions handing
 * theirs back at that moment (the stop waits for them). */
static bool ws_stopping, ws_daemon_gone;
static unsigned ws_in_action;

/* Hands the socket back to libmicrohttpd, unless the daemon is already
 * stopping (it then closes the socket itself); a session's last use of
 * its handle. */
static void session_release(struct MHD_UpgradeResponseHandle *urh)
{
	pthread_mutex_lock(&ws_lock);
	bool ok = !ws_daemon_gone;
	if (ok)
		ws_in_action++;
	pthread_mutex_unlock(&ws_lock);
	if (ok)
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
	pthread_mutex_lock(&ws_lock);
	if (ok)
		ws_in_action--;
	ws_active--;
	pthread_cond_broadcast(&ws_cond);
	pthread_mutex_unlock(&ws_lock);
}

static void pending_take(ws_session *s)
{
	for (ws_session **p = &ws_pending; *p != NULL; p = &(*p)->next_pending)
		if (*p == s) {
			*p = s->next_pending;
			break;
		}
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- framing callbacks ------------------------------------------------ */

static ssize_t ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len,
		       int flags, void *user)
{
	ws_session *s = user;
	(void)flags;
	/* Backpressure: wslay reads until the socket is dry, so stdin the
	 * program has not taken yet stops the reading here. */
	if (s->in_off < s->in_len && !s->close_queued) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (s->extra_off < s->extra_len) {
		size_t n = s->extra_len - s->extra_off;
		if (n > len)
			n = len;
		memcpy(buf, s->extra + s->extra_off, n);
		s->extra_off += n;
		return (ssize_t)n;
	}
	ssize_t r = read(s->fd, buf, len);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (r <= 0) {
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return r;
}

static ssize_t ws_send(wslay_event_context_ptr ctx, const uint8_t *data,
		       size_t len, int flags, void *user)
{
	ws_session *s = user;
	(void)flags;
	ssize_t r = send(s->fd, data, len, MSG_NOSIGNAL);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (r < 0) {
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return r;
}

static void send_json(ws_session *s, json_t *j)
{
	char *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER)
		       : NULL;
	json_decref(j);
	if (text == NULL)
		return;
	struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)text,
				    strlen(text)};
	wslay_event_queue_msg(s->ctx, &m); /* copies the message */
	free(text);
}

/* The close goes out after the messages queued before it: wslay sends
 * control frames ahead of data, so it is held until the queue is empty
 * (flush_close). */
static void close_with(ws_session *s, uint16_t code, const char *reason)
{
	if (s->close_queued)
		return;
	s->close_queued = true;
	s->close_code = code;
	snprintf(s->close_reason, sizeof(s->close_reason), "%s", reason);
}

static void flush_close(ws_session *s)
{
	if (s->close_queued && !s->close_sent &&
	    wslay_event_get_queued_msg_count(s->ctx) == 0) {
		s->close_sent = true;
		wslay_event_queue_close(s->ctx, s->close_code,
					(const uint8_t *)s->close_reason,
					strlen(s->close_reason));
	}
}

static void notify_error(ws_session *s, const char *msg)
{
	send_json(s, json_pack("{s:s, s:s}", "type", "error", "message", msg));
	close_with(s, 4002, "Notified Error");
}

/* ---- live stdin ------------------------------------------------------ */

static int stdin_add(ws_session *s, const unsigned char *p, size_t n)
{
	size_t pending = s->in_len - s->in_off;
	if (pending + n > AL_MAX_STDIN_BYTES)
		return -E2BIG;
	if (s->in_off > 0) {
		memmove(s->in, s->in + s->in_off, pending);
		s->in_len = pending;
		s->in_off = 0;
	}
	unsigned char *b = realloc(s->in, pending + n + 1);
	if (b == NULL)
		return -ENOMEM;
	memcpy(b + pending, p, n);
	s->in = b;
	s->in_len = pending + n;
	return 0;
}

/* Moves buffered stdin into the run's FIFO as far as the pipe takes it
 * (never blocking), and closes the FIFO once the client ended stdin.
 * The daemon holds the FIFO's read side too, so a program that stopped
 * reading only fills the pipe; what is left is dropped when the run is
 * done. */
static void stdin_flush(ws_session *s)
{
	if (!s->interactive || s->run == NULL)
		return;
	al_srv_run *run = s->run;
	pthread_mutex_lock(&s->svc->lock);
	if (run->state == AL_SRV_RUN_DONE)
		s->in_off = s->in_len;
	while (run->stdin_open && s->in_off < s->in_len) {
		ssize_t w = write(run->stdin_fd, s->in + s->in_off,
				  s->in_len - s->in_off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (w <= 0) {
			s->in_off = s->in_len;
			break;
		}
		s->in_off += (size_t)w;
	}
	if (s->stdin_eof && s->in_off == s->in_len) {
		/* Before the FIFO exists, this tells the launch to close
		 * it at once. */
		run->stdin_stream = false;
		if (run->stdin_open)
			close(run->stdin_fd);
		run->stdin_open = false;
	}
	pthread_mutex_unlock(&s->svc->lock);
}

/* The init's stdin moves from the request to the head of the stream. */
static int stdin_take_init(ws_session *s, json_t *req)
{
	const char *text = json_string_value(json_object_get(req, "stdin"));
	const char *b64 =
		json_string_value(json_object_get(req, "stdin_b64"));
	int rc = 0;
	if (text != NULL) {
		rc = stdin_add(s, (const unsigned char *)text,
			       json_string_length(json_object_get(req, "stdin")));
	} else if (b64 != NULL) {
		unsigned char *raw = NULL;
		size_t n = 0;
		rc = al_base64_decode(b64, strlen(b64), &raw, &n);
		if (rc == 0)
			rc = stdin_add(s, raw, n);
		free(raw);
	}
	json_object_del(req, "stdin");
	json_object_del(req, "stdin_b64");
	return rc;
}

/* A {"type": "data", "stream": "stdin"} message. */
static void stdin_message(ws_session *s, const json_t *msg)
{
	const json_t *data = json_object_get(msg, "data");
	if (!s->interactive) {
		notify_error(s, s->kind == AL_COMPAT_PISTON
					? "live stdin was turned off by "
					  "\"stdin_stream\": false in init"
					: "live stdin needs an interactive run: "
					  "send \"stdin_stream\": true in "
					  "init, or give stdin in init");
	} else if (s->stdin_eof) {
		notify_error(s, "stdin was already ended");
	} else if (data != NULL && !json_is_string(data)) {
		notify_error(s, "data must be a string");
	} else if (json_string_length(data) > STDIN_FRAME_MAX) {
		notify_error(s, "stdin data is over 65536 bytes: send it in "
				"smaller messages");
	} else if (data != NULL &&
		   stdin_add(s, (const unsigned char *)json_string_value(data),
			     json_string_length(data)) < 0) {
		notify_error(s, "stdin is over its bound");
	} else if (json_is_true(json_object_get(msg, "eof"))) {
		s->stdin_eof = true;
	}
}

/* ---- the run -------------------------------------------------------- */

static const char *stream_name(int stream)
{
	return stream == AL_STDERR ? "stderr" : "stdout";
}

/* Sends a chunk, holding back a UTF-8 sequence cut at its end. */
static void send_chunk(ws_session *s, int stream, const unsigned char *p,
		       size_t n)
{
	int k = stream == AL_STDERR ? 1 : 0;
	unsigned char *buf = malloc(s->carry_len[k] + n);
	if (buf == NULL)
		return;
	memcpy(buf, s->carry[k], s->carry_len[k]);
	memcpy(buf + s->carry_len[k], p, n);
	size_t len = s->carry_len[k] + n, keep = len;
	s->carry_len[k] = 0;
	for (size_t cut = 0; cut <= 3 && cut < len; cut++) {
		if (al_utf8_valid(buf, len - cut)) {
			keep = len - cut;
			break;
		}
	}
	if (len - keep <= 3) {
		memcpy(s->carry[k], buf + keep, len - keep);
		s->carry_len[k] = len - keep;
	} else {
		keep = len;
	}
	if (keep > 0)
		send_json(s, json_pack("{s:s, s:s, s:o}", "type", "data",
				       "stream", stream_name(stream), "data",
				       al_compat_text(buf, keep)));
	free(buf);
}

static void send_stage_output(ws_session *s, const json_t *r)
{
	static const char *const names[] = {"stdout", "stderr"};
	for (int i = 0; i < 2; i++) {
		unsigned char *p = NULL;
		size_t n = 0;
		if (al_compat_stream(r, names[i], &p, &n) == 0 && n > 0)
			send_json(s, json_pack("{s:s, s:s, s:o}", "type",
					       "data", "stream", names[i],
					       "data", al_compat_text(p, n)));
		free(p);
	}
}

static void send_exit(ws_session *s, const char *stage, const json_t *r)
{
	json_t *st = al_compat_piston_stage(r, NULL, 0);
	send_json(s, json_pack("{s:s, s:s, s:O?, s:O?}", "type", "exit",
			       "stage", stage, "code",
			       json_object_get(st, "code"), "signal",
			       json_object_get(st, "signal")));
	json_decref(st);
}

/* The run ended: what is left of the Piston protocol, or the /v1
 * result. */
static void finish(ws_session *s)
{
	al_compat_out o;
	s->finished = true;
	if (al_compat_lookup(s->svc, s->tenant, s->run->run_id, &o) != 0 ||
	    o.result == NULL) {
		al_compat_out_clear(&o);
		notify_error(s, "the run's result could not be read");
		return;
	}
	/* What was held back for a cut sequence goes out as it is. */
	for (int k = 0; k < 2; k++)
		if (s->carry_len[k] > 0)
			send_json(s, json_pack("{s:s, s:s, s:o}", "type", "data",
					       "stream", k ? "stderr" : "stdout",
					       "data",
					       al_compat_text(s->carry[k],
							      s->carry_len[k])));
	if (s->kind != AL_COMPAT_PISTON) {
		send_json(s, json_pack("{s:s, s:O}", "type", "result",
				       "result", o.result));
		al_compat_out_clear(&o);
		close_with(s, 1000, "run finished");
		return;
	}
	const json_t *build = json_object_get(o.result, "build");
	const char *reason =
		json_string_value(json_object_get(o.result, "reason"));
	bool build_failed = reason && strcmp(reason, "build_failed") == 0;
	/* Nothing went out live: no streaming grant, or a compiled run
	 * whose build end was not announced (it failed, or its provider
	 * does not announce it). */
	if (!s->live || (s->lang->compiled && !s->compile_sent)) {
		if (json_is_object(build)) {
			send_json(s, json_pack("{s:s, s:s}", "type", "stage",
					       "stage", "compile"));
			send_stage_output(s, build);
			send_exit(s, "compile", build);
		}
		if (!build_failed) {
			send_json(s, json_pack("{s:s, s:s}", "type", "stage",
					       "stage", "run"));
			send_stage_output(s, o.result);
		}
	}
	if (!build_failed)
		send_exit(s, "run", o.result);
	al_compat_out_clear(&o);
	close_with(s, 4999, "Job Completed");
}

/* A compiled run's build ended: its compile stage, then the run stage
 * whose output follows live. */
static void send_compile_stage(ws_session *s, const char *text)
{
	json_t *build = json_loads(text, 0, NULL);
	send_json(s, json_pack("{s:s, s:s}", "type", "stage", "stage",
			       "compile"));
	if (json_is_object(build)) {
		send_stage_output(s, build);
		send_exit(s, "compile", build);
	}
	json_decref(build);
	send_json(s, json_pack("{s:s, s:s}", "type", "stage", "stage", "run"));
	s->compile_sent = true;
}

/* Moves new output to the client; finishes when the run is done. */
static void pump(ws_session *s)
{
	al_service *svc = s->svc;
	bool compiled = s->kind == AL_COMPAT_PISTON && s->lang->compiled;
	typedef struct {
		int stream;
		unsigned char *data;
		size_t len;
	} chunk;
	chunk got[64];
	size_t n = 0;
	pthread_mutex_lock(&svc->lock);
	char *build = NULL;
	if (s->live && compiled && !s->compile_sent &&
	    s->run->build_stage != NULL)
		build = strdup(s->run->build_stage);
	/* a compiled run's output waits for its compile stage */
	bool forward = s->live && (!compiled || s->compile_sent ||
				   build != NULL);
	for (size_t i = 0; forward && i < s->run->n_events && n < 64; i++) {
		const al_srv_event *ev = &s->run->events[i];
		if (ev->seq < s->next_seq)
			continue;
		unsigned char *copy = malloc(ev->len);
		if (copy == NULL)
			break;
		memcpy(copy, ev->data, ev->len);
		got[n++] = (chunk){ev->stream, copy, ev->len};
		s->next_seq = ev->seq + 1;
	}
	bool more = false;
	for (size_t i = 0; i < s->run->n_events; i++)
		more = more || s->run->events[i].seq >= s->next_seq;
	bool done = s->run->state == AL_SRV_RUN_DONE && (!forward || !more);
	pthread_mutex_unlock(&svc->lock);
	if (build != NULL)
		send_compile_stage(s, build);
	free(build);
	for (size_t i = 0; i < n; i++) {
		send_chunk(s, got[i].stream, got[i].data, got[i].len);
		free(got[i].data);
	}
	if (done)
		finish(s);
}

static void start_run(ws_session *s, json_t *msg)
{
	al_compat_req q = {.svc = s->svc};
	snprintf(q.tenant, sizeof(q.tenant), "%s", s->tenant);
	json_t *req = NULL;
	char why[200] = "";
	if (s->kind == AL_COMPAT_PISTON) {
		json_t *langs = al_compat_languages(s->svc, s->tenant);
		const char *version = NULL;
		unsigned status = 0;
		req = langs ? al_compat_piston_translate(&q, msg, &s->lang,
							 &version, langs,
							 &status, why,
							 sizeof(why))
			    : NULL;
		if (req != NULL)
			snprintf(s->version, sizeof(s->version), "%s", version);
		json_decref(langs);
	} else {
		req = json_incref(json_object_get(msg, "request"));
		if (!json_is_object(req)) {
			json_decref(req);
			req = NULL;
			snprintf(why, sizeof(why),
				 "init: expected {\"type\": \"init\", "
				 "\"request\": {a /v1 run request}}");
		}
	}
	if (req == NULL) {
		notify_error(s, why[0] ? why : "cannot probe the providers");
		return;
	}
	/* Output as it arrives needs the streaming grant. */
	al_srv_gen *gen = al_service_gen_get(s->svc);
	const al_cfg_tenant *t = gen ? al_config_tenant(gen->cfg, s->tenant)
				     : NULL;
	bool can_stream = t != NULL && t->grant.streaming;
	json_t *grant = json_object_get(req, "grant");
	if (can_stream && (grant == NULL || json_is_object(grant))) {
		if (grant == NULL) {
			grant = json_object();
			json_object_set_new(req, "grant", grant);
		}
		json_object_set_new(grant, "streaming", json_true());
	}
	/* Piston keeps a connect's stdin open (its protocol), unless the
	 * init opts out; /v1 opts in. */
	const json_t *ss = json_object_get(msg, "stdin_stream");
	s->interactive = s->kind == AL_COMPAT_PISTON ? !json_is_false(ss)
						     : json_is_true(ss);
	if (s->interactive && stdin_take_init(s, req) < 0) {
		json_decref(req);
		al_service_gen_put(s->svc, gen);
		notify_error(s, "init: stdin is not valid or over its bound");
		return;
	}
	char *body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	al_srv_submit_headers hdrs = {.stdin_stream = s->interactive};
	int err = gen && body ? al_service_submit(s->svc, gen, s->tenant,
						  s->principal, body,
						  strlen(body), &hdrs, &s->run)
			      : -ENOMEM;
	al_service_gen_put(s->svc, gen);
	free(body);
	if (err < 0) {
		s->run = NULL;
		notify_error(s, "the run could not be started");
		return;
	}
	s->inited = true;
	if (s->kind == AL_COMPAT_PISTON) {
		s->live = can_stream;
		send_json(s, json_pack("{s:s, s:s, s:s}", "type", "runtime",
				       "language", s->lang->piston, "version",
				       s->version));
		if (s->live && !s->lang->compiled)
			send_json(s, json_pack("{s:s, s:s}", "type", "stage",
					       "stage", "run"));
	} else {
		s->live = can_stream;
		al_service_wait(s->svc, s->run, false);
		send_json(s, json_pack("{s:s, s:s}", "type", "run", "run_id",
				       s->run->run_id));
	}
}

static bool valid_signal(const char *name)
{
	static const char *const ok[] = {
		"SIGABRT", "SIGALRM", "SIGBUS",	 "SIGCHLD", "SIGCONT", "SIGFPE",
		"SIGHUP",  "SIGILL",  "SIGINT",	 "SIGIO",   "SIGKILL", "SIGPIPE",
		"SIGPROF", "SIGPWR",  "SIGQUIT", "SIGSEGV", "SIGSTKFLT",
		"SIGSTOP", "SIGSYS",  "SIGTERM", "SIGTRAP", "SIGTSTP", "SIGTTIN",
		"SIGTTOU", "SIGURG",  "SIGUSR1", "SIGUSR2", "SIGVTALRM",
		"SIGWINCH", "SIGXCPU", "SIGXFSZ"};
	for (size_t i = 0; name && i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strcmp(name, ok[i]) == 0)
			return true;
	return false;
}

static void on_msg(wslay_event_context_ptr ctx,
		   const struct wslay_event_on_msg_recv_arg *arg, void *user)
{
	ws_session *s = user;
	(void)ctx;
	if (arg->opcode != WSLAY_TEXT_FRAME && arg->opcode != WSLAY_BINARY_FRAME)
		return; /* close and ping are wslay's */
	json_t *msg = json_loadb((const char *)arg->msg, arg->msg_length, 0,
				 NULL);
	const char *type = json_string_value(json_object_get(msg, "type"));
	if (type == NULL) {
		notify_error(s, "expected a JSON object with a type");
	} else if (strcmp(type, "init") == 0) {
		if (s->inited)
			close_with(s, 4000, "Already Initialized");
		else
			start_run(s, msg);
	} else if (strcmp(type, "data") == 0 || strcmp(type, "signal") == 0) {
		const char *stream =
			json_string_value(json_object_get(msg, "stream"));
		const char *sig =
			json_string_value(json_object_get(msg, "signal"));
		if (!s->inited)
			close_with(s, 4003, "Not yet Initialized");
		else if (type[0] == 'd' && (stream == NULL ||
					    strcmp(stream, "stdin") != 0))
			close_with(s, 4004, "Can only write to stdin");
		else if (type[0] == 'd')
			stdin_message(s, msg);
		else if (!valid_signal(sig))
			close_with(s, 4005, "Invalid signal");
		else if (!s->finished)
			(void)al_service_interrupt(s->svc, s->run, true);
	} else {
		notify_error(s, "unknown message type");
	}
	json_decref(msg);
}

static void *session_main(void *arg)
{
	ws_session *s = arg;
	struct wslay_event_callbacks cb = {.recv_callback = ws_recv,
					   .send_callback = ws_send,
					   .on_msg_recv_callback = on_msg};
	if (wslay_event_context_server_init(&s->ctx, &cb, s) == 0) {
		wslay_event_config_set_max_recv_msg_length(s->ctx,
							   MAX_MSG_BYTES);
		for (;;) {
			pthread_mutex_lock(&s->svc->lock);
			bool closing = s->svc->closing;
			pthread_mutex_unlock(&s->svc->lock);
			pthread_mutex_lock(&ws_lock);
			bool stopping = ws_stopping;
			pthread_mutex_unlock(&ws_lock);
			if (!s->inited && !s->close_queued &&
			    now_ms() - s->t0_ms > INIT_TIMEOUT_MS)
				close_with(s, 4001, "Initialization Timeout");
			/* A run that ended gives its exit before a 1001. */
			if (s->run != NULL && !s->finished && !s->close_queued)
				pump(s);
			if (closing || stopping)
				close_with(s, 1001, "going away");
			stdin_flush(s);
			flush_close(s);
			/* A peer that never answers the close is not waited
			 * for past CLOSE_WAIT_MS. */
			if (s->close_sent && s->close_at_ms == 0)
				s->close_at_ms = now_ms();
			if (s->close_at_ms != 0 &&
			    now_ms() - s->close_at_ms >
				    (stopping ? STOP_CLOSE_WAIT_MS
					      : CLOSE_WAIT_MS))
				break;
			bool rd = wslay_event_want_read(s->ctx);
			bool wr = wslay_event_want_write(s->ctx);
			if (!rd && !wr)
				break;
			/* Backpressure (ws_recv): stdin the program has
			 * not taken yet holds the socket's reading. */
			if (s->in_off < s->in_len && !s->close_queued)
				rd = false;
			struct pollfd p = {s->fd,
					   (short)((rd ? POLLIN : 0) |
						   (wr ? POLLOUT : 0)),
					   0};
			bool pending = s->extra_off < s->extra_len;
			if (!pending && poll(&p, 1, 50) < 0 && errno != EINTR)
				break;
			if ((pending || (p.revents & (POLLIN | POLLHUP))) &&
			    wslay_event_recv(s->ctx) != 0)
				break;
			if ((p.revents & POLLOUT) &&
			    wslay_event_send(s->ctx) != 0)
				break;
			if (p.revents & (POLLERR | POLLNVAL))
				break;
		}
		wslay_event_context_free(s->ctx);
	}
	/* A run the client left still ends as runs do: it is not stopped
	 * by the socket closing (its result stays readable); its live
	 * stdin ends. */
	s->stdin_eof = true;
	s->in_off = s->in_len;
	stdin_flush(s);
	free(s->in);
	al_service_run_put(s->svc, s->run);
	struct MHD_UpgradeResponseHandle *urh = s->urh;
	free(s->extra);
	free(s);
	session_release(urh);
	return NULL;
}

static void upgraded(void *cls, struct MHD_Connection *conn, void *con_cls,
		     const char *extra_in, size_t extra_in_size,
		     MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
	ws_session *s = cls;
	(void)conn;
	(void)con_cls;
	s->fd = sock;
	s->urh = urh;
	s->t0_ms = now_ms();
	if (extra_in_size > 0 && (s->extra = malloc(extra_in_size)) != NULL) {
		memcpy(s->extra, extra_in, extra_in_size);
		s->extra_len = extra_in_size;
	}
	int fl = fcntl(sock, F_GETFL);
	if (fl >= 0)
		(void)fcntl(sock, F_SETFL, fl | O_NONBLOCK);
	pthread_attr_t attr;
	pthread_t t;
	bool started = false;
	pthread_mutex_lock(&ws_lock);
	pending_take(s);
	ws_active++;
	/* An upgrade completing while the daemon stops gets no session. */
	bool stopping = ws_stopping;
	pthread_mutex_unlock(&ws_lock);
	if (!stopping && pthread_attr_init(&attr) == 0) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		started = pthread_create(&t, &attr, session_main, s) == 0;
		pthread_attr_destroy(&attr);
	}
	if (!started) {
		free(s->extra);
		free(s);
		session_release(urh);
	}
}

static bool header_has_token(const char *v, const char *token)
{
	size_t n = strlen(token);
	for (const char *p = v; p != NULL && *p != '\0';) {
		p += strspn(p, " \t,");
		size_t k = strcspn(p, ",");
		size_t e = k;
		while (e > 0 && (p[e - 1] == ' ' || p[e - 1] == '\t'))
			e--;
		if (e == n && strncasecmp(p, token, n) == 0)
			return true;
		p += k;
	}
	return false;
}

enum MHD_Result al_compat_ws_answer(const al_compat_req *q,
				    al_compat_kind kind)
{
	struct MHD_Connection *c = q->conn;
	const char *up = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						     "Upgrade");
	const char *conn_h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							 "Connection");
	const char *key = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						      "Sec-WebSocket-Key");
	const char *ver = MHD_lookup_connection_value(
		c, MHD_HEADER_KIND, "Sec-WebSocket-Version");
	if (strcmp(q->method, "GET") != 0 || up == NULL ||
	    !header_has_token(up, "websocket") || conn_h == NULL ||
	    !header_has_token(conn_h, "upgrade") || key == NULL ||
	    strlen(key) > 64 || ver == NULL || strcmp(ver, "13") != 0)
		return al_compat_send(
			q, 426,
			json_pack("{s:s}",
				  kind == AL_COMPAT_PISTON ? "message" : "error",
				  "a WebSocket upgrade (version 13) is "
				  "required"),
			"Sec-WebSocket-Version", "13");
	/* RFC 6455: base64(SHA-1(key + GUID)). */
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	struct sha1_ctx sh;
	uint8_t digest[SHA1_DIGEST_SIZE];
	sha1_init(&sh);
	sha1_update(&sh, strlen(key), (const uint8_t *)key);
	sha1_update(&sh, sizeof(guid) - 1, (const uint8_t *)guid);
	sha1_digest(&sh, sizeof(digest), digest);
	char *accept = al_base64_encode(digest, sizeof(digest));
	ws_session *s = calloc(1, sizeof(*s));
	struct MHD_Response *resp =
		s && accept ? MHD_create_response_for_upgrade(upgraded, s)
			    : NULL;
	if (resp == NULL) {
		free(s);
		free(accept);
		return MHD_NO;
	}
	s->svc = q->svc;
	s->kind = kind;
	snprintf(s->tenant, sizeof(s->tenant), "%s", q->tenant);
	snprintf(s->principal, sizeof(s->principal), "%s", q->principal);
	s->fd = -1;
	MHD_add_response_header(resp, "Upgrade", "websocket");
	MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
	free(accept);
	al_http_answer(resp, 101, 0, true);
	pthread_mutex_lock(&ws_lock);
	s->next_pending = ws_pending;
	ws_pending = s;
	pthread_mutex_unlock(&ws_lock);
	enum MHD_Result ret = MHD_queue_response(c, 101, resp);
	MHD_destroy_response(resp);
	al_srv_metrics_http(q->svc->metrics, 101);
	if (ret != MHD_YES) {
		/* The handler is never called. */
		pthread_mutex_lock(&ws_lock);
		pending_take(s);
		pthread_mutex_unlock(&ws_lock);
		free(s);
	}
	return ret;
}

bool al_compat_ws_end(unsigned wait_ms)
{
	struct timespec deadline;
	al_deadline(CLOCK_REALTIME, &deadline, wait_ms);
	pthread_mutex_lock(&ws_lock);
	ws_stopping = true;
	while (ws_active > 0 &&
	       pthread_cond_timedwait(&ws_cond, &ws_lock, &deadline) == 0)
		;
	bool all = ws_active == 0;
	/* A session still going must not touch its handle once the daemon
	 * stops; one already handing it back finishes first (briefly). */
	ws_daemon_gone = true;
	while (ws_in_action > 0)
		pthread_cond_wait(&ws_cond, &ws_lock);
	pthread_mutex_unlock(&ws_lock);
	return all;
}

void al_compat_ws_stop(void)
{
	pthread_mutex_lock(&ws_lock);
	while (ws_active > 0)
		pthread_cond_wait(&ws_cond, &ws_lock);
	while (ws_pending != NULL) {
		ws_session *s = ws_pending;
		ws_pending = s->next_pending;
		free(s);
	}
	ws_stopping = ws_daemon_gone = false; /* for a next daemon */
	pthread_mutex_unlock(&ws_lock);
}
