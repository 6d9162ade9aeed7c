/* The toolbelt's host side, served by the run's supervisor (see
 * toolbelt.h and docs/toolbelt.md). */
#include "supervisor/toolbelt.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <airlock/json.h>

#include "core/log.h"
#include "core/util.h"
#include "json/limits_table.h"
#include "json/toolbelt_json.h"
#include "supervisor/record_file.h"
#include "tool/proto.h"

/* Connections served at once; one more waits in the backlog. */
#define MAX_CONNS 16
/* A client has this long to send its request once connected. */
#define REQUEST_DEADLINE_MS 2000
/* Requests of any kind: a sustained rate and a burst; host operations
 * have a lower one of their own. */
#define RATE_PER_S 200.0
#define RATE_BURST 200.0
#define CALL_RATE_PER_S 5.0
#define CALL_BURST 10.0
/* Answers kept for --request-id (oldest dropped first), calls recorded. */
#define MAX_REMEMBERED 64
#define MAX_CALLS_RECORDED 1024
#define MAX_MODULES 16

typedef struct conn {
	int fd;
	int64_t deadline;
} conn;

typedef struct bucket {
	double tokens;
	int64_t at_ms;
} bucket;

typedef struct module {
	char *path;
	void *handle;
} module;

typedef int (*al_tool_module_fn)(const char *operation, const char *run_id,
				 const char *input_json, char **output_json);

struct al_toolbelt {
	char *run_id;
	int tool_fd;
	int listen_fd;
	int stop_fd;
	int outlog_fd;
	int64_t deadline_ms;
	al_tool_webhook_fn webhook;
	pthread_t thread;
	bool running;
	conn conns[MAX_CONNS];
	json_t *context;    /* the context's fixed fields */
	json_t *granted;    /* grant.operations */
	json_t *ops;	    /* the definitions, by name */
	json_t *events;
	size_t events_bytes;
	json_t *declaration;
	json_t *calls;
	json_t *remembered; /* request id -> {"op", "answer"} */
	json_t *order;	    /* request ids, oldest first */
	bucket rate, call_rate;
	module modules[MAX_MODULES];
	size_t n_modules;
	unsigned char buf[AL_TOOL_MAX_MSG + 1];
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool take(bucket *b, double per_s, double burst)
{
	int64_t now = mono_ms();
	b->tokens += (double)(now - b->at_ms) * per_s / 1000.0;
	if (b->tokens > burst)
		b->tokens = burst;
	b->at_ms = now;
	if (b->tokens < 1.0)
		return false;
	b->tokens -= 1.0;
	return true;
}

/* ---- the token ------------------------------------------------------- */

static int new_token(char out[AL_TOOL_TOKEN_HEX + 1])
{
	unsigned char raw[AL_TOOL_TOKEN_HEX / 2];
	static const char hex[] = "0123456789abcdef";
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -EIO;
	for (size_t i = 0; i < sizeof(raw); i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[AL_TOOL_TOKEN_HEX] = '\0';
	explicit_bzero(raw, sizeof(raw));
	return 0;
}

/* token, 0600, owned by uid/gid (-1: ours), replaced atomically. */
static int write_token(int tool_fd, const char *token, uid_t uid, gid_t gid)
{
	static const char tmp[] = AL_TOOL_TOKEN_NAME ".new";
	unlinkat(tool_fd, tmp, 0);
	int fd = openat(tool_fd, tmp,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0600);
	if (fd < 0)
		return -errno;
	int rc = 0;
	size_t len = strlen(token);
	if (write(fd, token, len) != (ssize_t)len)
		rc = -EIO;
	else if (fchmod(fd, 0600) < 0 ||
		 (uid != (uid_t)-1 && fchown(fd, uid, gid) < 0) || fsync(fd) < 0)
		rc = -errno;
	close(fd);
	if (rc == 0 && renameat(tool_fd, tmp, tool_fd, AL_TOOL_TOKEN_NAME) < 0)
		rc = -errno;
	if (rc < 0)
		unlinkat(tool_fd, tmp, 0);
	return rc;
}

/* The presented token against the file, in constant time. */
static bool token_ok(int tool_fd, const char *presented)
{
	char *cur = NULL;
	if (presented == NULL || strlen(presented) != AL_TOOL_TOKEN_HEX ||
	    al_record_file_read(tool_fd, AL_TOOL_TOKEN_NAME, 256, &cur, NULL) < 0)
		return false;
	bool ok = strlen(cur) == AL_TOOL_TOKEN_HEX;
	unsigned char diff = 0;
	for (size_t i = 0; ok && i < AL_TOOL_TOKEN_HEX; i++)
		diff |= (unsigned char)(cur[i] ^ presented[i]);
	explicit_bzero(cur, strlen(cur));
	free(cur);
	return ok && diff == 0;
}

int al_toolbelt_rotate(int run_dirfd)
{
	int tool_fd = openat(run_dirfd, AL_RF_TOOL,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tool_fd < 0)
		return errno == ENOENT ? 0 : -errno;
	struct stat st;
	char token[AL_TOOL_TOKEN_HEX + 1];
	int rc = fstatat(tool_fd, AL_TOOL_TOKEN_NAME, &st, AT_SYMLINK_NOFOLLOW);
	if (rc < 0)
		rc = errno == ENOENT ? 0 : -errno;
	else if ((rc = new_token(token)) == 0)
		/* the same owner: the run's uid in a sandbox */
		rc = write_token(tool_fd, token, st.st_uid, st.st_gid);
	explicit_bzero(token, sizeof(token));
	close(tool_fd);
	return rc;
}

int al_toolbelt_persist_operations(int run_dirfd, const char *ops_json)
{
	if (ops_json == NULL)
		return 0;
	return al_record_file_write_how(run_dirfd, AL_RF_OPERATIONS, ops_json,
				  strlen(ops_json), 0600, AL_RECORD_FILE_FILE_ONLY);
}

char *al_toolbelt_dir(const char *run_dir)
{
	return al_strdup_printf("%s/" AL_RF_TOOL, run_dir);
}

/* The installed modules' directory (`make install`), else empty. */
#ifndef AL_MODULE_DIR
#define AL_MODULE_DIR ""
#endif

char *al_toolbelt_bin_dir(void)
{
	char path[4096];
	const char *env = getenv("AIRLOCK_TOOLBELT_DIR");
	ssize_t n = env != NULL && env[0] == '/'
			    ? -1
			    : readlink("/proc/self/exe", path, sizeof(path) - 64);
	char *dir = env != NULL && env[0] == '/' ? strdup(env) : NULL;
	if (n > 0) {
		path[n] = '\0';
		char *slash = strrchr(path, '/');
		if (slash != NULL)
			*slash = '\0';
		dir = al_strdup_printf("%s/toolbelt", path);
	}
	/* Beside the binary (a build tree), else the installed one. */
	for (int i = 0; i < 2; i++) {
		if (dir != NULL) {
			char *cmd = al_strdup_printf("%s/airlock-tool", dir);
			bool there = cmd != NULL && access(cmd, X_OK) == 0;
			free(cmd);
			if (there)
				return dir;
		}
		free(dir);
		dir = i == 0 && n > 0 && AL_MODULE_DIR[0] != '\0'
			      ? strdup(AL_MODULE_DIR "/toolbelt")
			      : NULL;
	}
	return NULL;
}

/* ---- answers --------------------------------------------------------- */

static json_t *fail(const char *code)
{
	return json_pack("{s:b, s:s}", "ok", 0, "error", code);
}

static json_t *ok(json_t *result)
{
	return json_pack("{s:b, s:o}", "ok", 1, "result",
			 result != NULL ? result : json_object());
}

static void remember(al_toolbelt *tb, const char *id, const char *op,
		     const json_t *answer)
{
	if (json_array_size(tb->order) >= MAX_REMEMBERED) {
		const char *old = json_string_value(json_array_get(tb->order, 0));
		if (old != NULL)
			json_object_del(tb->remembered, old);
		json_array_remove(tb->order, 0);
	}
	json_t *e = json_pack("{s:s, s:O}", "op", op, "answer", answer);
	if (e != NULL && json_object_set_new(tb->remembered, id, e) == 0)
		json_array_append_new(tb->order, json_string(id));
}

/* ---- operations ------------------------------------------------------ */

static json_t *op_context(al_toolbelt *tb)
{
	json_t *c = json_deep_copy(tb->context);
	char when[40];
	al_format_time_ms(tb->deadline_ms, when, sizeof(when));
	json_object_set_new(c, "deadline", json_string(when));
	json_object_set_new(c, "deadline_ms", json_integer(tb->deadline_ms));
	return ok(c);
}

/* One record (stream byte 3) appended to RUN/output: the daemon tails it
 * and sends it as an SSE `event`. */
static void append_event_record(int fd, const char *text, size_t n)
{
	unsigned char hdr[8] = {3, 0, 0, 0, (unsigned char)(n & 0xff),
				(unsigned char)((n >> 8) & 0xff),
				(unsigned char)((n >> 16) & 0xff),
				(unsigned char)((n >> 24) & 0xff)};
	struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)text, n}};
	ssize_t w;
	do
		w = writev(fd, iov, 2);
	while (w < 0 && errno == EINTR);
}

static json_t *op_emit(al_toolbelt *tb, const json_t *req)
{
	const char *type = json_string_value(json_object_get(req, "type"));
	json_t *data = json_object_get(req, "data");
	if (type == NULL || !al_tool_name_valid(type) || data == NULL)
		return fail("bad_request");
	char *dtext = json_dumps(data, JSON_COMPACT | JSON_ENCODE_ANY);
	size_t dlen = dtext != NULL ? strlen(dtext) : 0;
	free(dtext);
	if (dlen == 0)
		return fail("bad_request");
	if (dlen > AL_TOOL_MAX_EVENT_BYTES)
		return fail("too_large");
	if (json_array_size(tb->events) >= AL_TOOL_MAX_EVENTS)
		return fail("too_many_events");
	if (tb->events_bytes + dlen > AL_TOOL_MAX_EVENTS_BYTES)
		return fail("events_full");
	size_t seq = json_array_size(tb->events) + 1;
	json_t *ev = json_pack("{s:I, s:s, s:O, s:I}", "seq", (json_int_t)seq,
			       "type", type, "data", data, "at_ms",
			       (json_int_t)al_now_ms());
	char *text = ev != NULL ? json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER)
				: NULL;
	if (text == NULL || json_array_append(tb->events, ev) < 0) {
		free(text);
		json_decref(ev);
		return fail("internal");
	}
	tb->events_bytes += dlen;
	if (tb->outlog_fd >= 0)
		append_event_record(tb->outlog_fd, text, strlen(text));
	free(text);
	json_decref(ev);
	return ok(json_pack("{s:I}", "seq", (json_int_t)seq));
}

static json_t *op_outcome(al_toolbelt *tb, const json_t *req)
{
	const char *o = json_string_value(json_object_get(req, "outcome"));
	const json_t *rv = json_object_get(req, "reason");
	const char *reason = json_string_value(rv);
	if (o == NULL ||
	    (strcmp(o, "completed") != 0 && strcmp(o, "failed") != 0) ||
	    (rv != NULL && (reason == NULL || !al_tool_name_valid(reason))))
		return fail("bad_request");
	json_decref(tb->declaration);
	tb->declaration = reason != NULL
				  ? json_pack("{s:s, s:s}", "outcome", o,
					      "reason", reason)
				  : json_pack("{s:s}", "outcome", o);
	/* A declaration only takes effect once the process is seen to
	 * finish (al_toolbelt_finish): the last one before that counts. */
	return ok(json_pack("{s:s}", "declared", o));
}

static void *module_handle(al_toolbelt *tb, const char *path)
{
	for (size_t i = 0; i < tb->n_modules; i++)
		if (strcmp(tb->modules[i].path, path) == 0)
			return tb->modules[i].handle;
	if (tb->n_modules == MAX_MODULES)
		return NULL;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	char *p = h != NULL ? strdup(path) : NULL;
	if (p == NULL) {
		if (h != NULL)
			dlclose(h);
		return NULL;
	}
	tb->modules[tb->n_modules++] = (module){p, h};
	return h;
}

/* Runs one operation: *result on success, else the error code. */
static const char *run_operation(al_toolbelt *tb, const char *name,
				 const json_t *def, const json_t *input,
				 json_t **result)
{
	const char *kind = json_string_value(json_object_get(def, "kind"));
	char *in = json_dumps(input, JSON_COMPACT | JSON_ENCODE_ANY);
	char *out = NULL;
	const char *why = NULL;
	if (in == NULL)
		return "internal";
	if (kind != NULL && strcmp(kind, "webhook") == 0) {
		json_t *body = json_pack("{s:s, s:s, s:O}", "run_id", tb->run_id,
					 "operation", name, "input", input);
		char *btext = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
		long status = 0;
		int rc = -ENOSYS;
		if (btext != NULL && tb->webhook != NULL)
			rc = tb->webhook(
				json_string_value(json_object_get(def, "url")),
				btext,
				(uint64_t)json_integer_value(
					json_object_get(def, "timeout_ms")),
				(uint64_t)json_integer_value(json_object_get(
					def, "max_response_bytes")),
				&status, &out);
		free(btext);
		json_decref(body);
		if (rc == -ETIMEDOUT)
			why = "timeout";
		else if (rc == -EFBIG)
			why = "response_too_large";
		else if (rc < 0 || status < 200 || status > 299)
			why = "operation_failed";
	} else if (kind != NULL && strcmp(kind, "module") == 0) {
		void *h = module_handle(
			tb, json_string_value(json_object_get(def, "path")));
		al_tool_module_fn fn = NULL;
		if (h != NULL)
			*(void **)&fn = dlsym(
				h, json_string_value(json_object_get(def, "symbol")));
		if (fn == NULL)
			why = "operation_unavailable";
		else if (fn(name, tb->run_id, in, &out) != 0)
			why = "operation_failed";
		if (out != NULL && strlen(out) > AL_TOOL_MAX_CALL_BYTES)
			why = "response_too_large";
	} else {
		why = "operation_unavailable";
	}
	free(in);
	if (why == NULL) {
		*result = out != NULL && out[0] != '\0'
				  ? json_loads(out, JSON_DECODE_ANY, NULL)
				  : json_null();
		if (*result == NULL)
			why = "operation_failed"; /* not JSON */
	}
	free(out);
	return why;
}

static json_t *op_call(al_toolbelt *tb, const json_t *req)
{
	const char *name = json_string_value(json_object_get(req, "operation"));
	const json_t *input = json_object_get(req, "input");
	if (name == NULL || !al_tool_name_valid(name) || input == NULL)
		return fail("bad_request");
	bool granted = false;
	size_t i;
	json_t *g;
	json_array_foreach(tb->granted, i, g) {
		if (json_is_string(g) && strcmp(json_string_value(g), name) == 0)
			granted = true;
	}
	const json_t *def = json_object_get(tb->ops, name);
	const char *why = NULL;
	json_t *result = NULL;
	if (!granted || def == NULL)
		why = "denied";
	else if (!take(&tb->call_rate, CALL_RATE_PER_S, CALL_BURST))
		why = "rate_limited";
	else
		why = run_operation(tb, name, def, input, &result);
	/* Every call is recorded and logged: the operation and its outcome,
	 * never the payload. */
	const char *outcome = why != NULL ? why : "ok";
	if (json_array_size(tb->calls) < MAX_CALLS_RECORDED)
		json_array_append_new(tb->calls,
				      json_pack("{s:s, s:s, s:I}", "operation",
						name, "outcome", outcome,
						"at_ms", (json_int_t)al_now_ms()));
	al_logf(AL_LOG_INFO, tb->run_id, "toolbelt call %s: %s", name, outcome);
	if (why != NULL)
		return fail(why);
	return ok(result);
}

static json_t *handle(al_toolbelt *tb, const unsigned char *msg, size_t n)
{
	json_t *req = json_loadb((const char *)msg, n, JSON_REJECT_DUPLICATES,
				 NULL);
	json_t *answer = NULL;
	if (!json_is_object(req)) {
		answer = fail("bad_request");
		goto out;
	}
	if (!token_ok(tb->tool_fd,
		      json_string_value(json_object_get(req, "token")))) {
		answer = fail("bad_token");
		goto out;
	}
	if (!take(&tb->rate, RATE_PER_S, RATE_BURST)) {
		answer = fail("rate_limited");
		goto out;
	}
	const char *op = json_string_value(json_object_get(req, "op"));
	const json_t *idv = json_object_get(req, "request_id");
	const char *id = json_string_value(idv);
	if (op == NULL || (idv != NULL && (id == NULL || !al_tool_name_valid(id)))) {
		answer = fail("bad_request");
		goto out;
	}
	if (id != NULL) {
		json_t *e = json_object_get(tb->remembered, id);
		if (e != NULL) {
			/* The same request again: its first answer. */
			answer = strcmp(json_string_value(json_object_get(e, "op")),
					op) == 0
					 ? json_incref(json_object_get(e, "answer"))
					 : fail("request_id_reused");
			goto out;
		}
	}
	if (strcmp(op, "context") == 0)
		answer = op_context(tb);
	else if (strcmp(op, "emit") == 0)
		answer = op_emit(tb, req);
	else if (strcmp(op, "outcome") == 0)
		answer = op_outcome(tb, req);
	else if (strcmp(op, "call") == 0)
		answer = op_call(tb, req);
	else
		answer = fail("bad_request");
	if (id != NULL && answer != NULL)
		remember(tb, id, op, answer);
out:
	if (req != NULL) {
		/* the credential does not outlive the request */
		json_t *t = json_object_get(req, "token");
		if (json_is_string(t)) {
			size_t len = json_string_length(t);
			explicit_bzero((char *)json_string_value(t), len);
		}
	}
	json_decref(req);
	return answer != NULL ? answer : fail("internal");
}

/* ---- the server thread ----------------------------------------------- */

static void drop(conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static void serve_one(al_toolbelt *tb, conn *c)
{
	struct msghdr mh = {0};
	struct iovec iov = {tb->buf, sizeof(tb->buf)};
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		drop(c);
		return;
	}
	json_t *answer = (mh.msg_flags & MSG_TRUNC) || (size_t)n > AL_TOOL_MAX_MSG
				 ? fail("too_large")
				 : handle(tb, tb->buf, (size_t)n);
	explicit_bzero(tb->buf, (size_t)n < sizeof(tb->buf) ? (size_t)n
							     : sizeof(tb->buf));
	char *text = answer != NULL ? json_dumps(answer, JSON_COMPACT) : NULL;
	json_decref(answer);
	if (text != NULL && strlen(text) > AL_TOOL_MAX_MSG) {
		free(text);
		answer = fail("response_too_large");
		text = json_dumps(answer, JSON_COMPACT);
		json_decref(answer);
	}
	/* Never waits on the client: an answer it does not take is lost. */
	if (text != NULL)
		(void)send(c->fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL);
	free(text);
	drop(c);
}

static void *server_main(void *arg)
{
	al_toolbelt *tb = arg;
	for (;;) {
		struct pollfd p[MAX_CONNS + 2];
		int idx[MAX_CONNS];
		nfds_t np = 0;
		size_t live = 0;
		int64_t now = mono_ms(), next = -1;
		p[np++] = (struct pollfd){tb->stop_fd, POLLIN, 0};
		for (int i = 0; i < MAX_CONNS; i++) {
			conn *c = &tb->conns[i];
			if (c->fd < 0)
				continue;
			if (now >= c->deadline) {
				drop(c);
				continue;
			}
			if (next < 0 || c->deadline < next)
				next = c->deadline;
			idx[np - 1] = i;
			p[np++] = (struct pollfd){c->fd, POLLIN, 0};
			live++;
		}
		nfds_t listen_at = np;
		if (live < MAX_CONNS)
			p[np++] = (struct pollfd){tb->listen_fd, POLLIN, 0};
		int wait = next < 0 ? -1 : (int)(next - now);
		int r = poll(p, np, wait);
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		if (p[0].revents)
			break;
		for (nfds_t k = 1; k < listen_at; k++)
			if (p[k].revents)
				serve_one(tb, &tb->conns[idx[k - 1]]);
		if (listen_at < np && p[listen_at].revents) {
			for (int i = 0; i < MAX_CONNS; i++) {
				if (tb->conns[i].fd >= 0)
					continue;
				int fd = accept4(tb->listen_fd, NULL, NULL,
						 SOCK_NONBLOCK | SOCK_CLOEXEC);
				if (fd < 0)
					break;
				tb->conns[i] = (conn){fd, mono_ms() +
								  REQUEST_DEADLINE_MS};
			}
		}
	}
	return NULL;
}

/* ---- start and finish ------------------------------------------------ */

static int listen_socket(int tool_fd)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	/* Through the directory's descriptor: a long state directory does
	 * not run into sun_path's 108 bytes. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s",
		 tool_fd, AL_TOOL_SOCK_NAME);
	unlinkat(tool_fd, AL_TOOL_SOCK_NAME, 0);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       0);
	if (s < 0)
		return -errno;
	if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    /* the run's uid connects; only this run's mount shows it */
	    fchmodat(tool_fd, AL_TOOL_SOCK_NAME, 0666, 0) < 0 ||
	    listen(s, 4) < 0) {
		int e = errno;
		close(s);
		return -e;
	}
	return s;
}

/* The run's limits as they apply: the request's, and each default it
 * left unset (0: none). */
static json_t *effective_limits(const char *request_json)
{
	al_request *r = NULL;
	if (al_request_from_json(request_json, strlen(request_json), &r,
				 NULL) < 0)
		return NULL;
	al_limits l = r->limits;
	al_request_free(r);
	al_limits_apply_defaults(&l);
	json_t *o = json_object();
	for (const al_limit_row *row = al_limit_rows; o != NULL && row->bit;
	     row++)
		json_object_set_new(o, row->name,
				    json_integer((json_int_t)al_limit_get(
					    &l, row->bit)));
	return o;
}

static int load_context(al_toolbelt *tb, const al_toolbelt_cfg *cfg)
{
	json_t *req = json_loads(cfg->request_json, 0, NULL);
	if (req == NULL)
		return -EBADMSG;
	json_t *limits = effective_limits(cfg->request_json);
	if (limits != NULL && json_object_set_new(req, "limits", limits) < 0) {
		json_decref(req);
		return -ENOMEM;
	}
	json_t *grant = json_object_get(req, "grant");
	tb->context = json_pack("{s:s, s:O?, s:O?, s:O?, s:O?, s:i}", "run_id",
				cfg->run_id, "language",
				json_object_get(req, "language"), "purpose",
				json_object_get(req, "purpose"), "limits",
				json_object_get(req, "limits"), "grant", grant,
				"attempt", 1);
	tb->granted = json_incref(json_object_get(grant, "operations"));
	if (tb->granted == NULL)
		tb->granted = json_array();
	json_decref(req);
	return tb->context != NULL && tb->granted != NULL ? 0 : -ENOMEM;
}

static void tb_free(al_toolbelt *tb)
{
	if (tb == NULL)
		return;
	for (int i = 0; i < MAX_CONNS; i++)
		drop(&tb->conns[i]);
	if (tb->listen_fd >= 0)
		close(tb->listen_fd);
	if (tb->stop_fd >= 0)
		close(tb->stop_fd);
	if (tb->tool_fd >= 0)
		close(tb->tool_fd);
	for (size_t i = 0; i < tb->n_modules; i++) {
		dlclose(tb->modules[i].handle);
		free(tb->modules[i].path);
	}
	json_decref(tb->context);
	json_decref(tb->granted);
	json_decref(tb->ops);
	json_decref(tb->events);
	json_decref(tb->declaration);
	json_decref(tb->calls);
	json_decref(tb->remembered);
	json_decref(tb->order);
	free(tb->run_id);
	free(tb);
}

int al_toolbelt_start(const al_toolbelt_cfg *cfg, char token_out[65],
		      al_toolbelt **out)
{
	al_toolbelt *tb = calloc(1, sizeof(*tb));
	int rc = 0;
	*out = NULL;
	if (tb == NULL)
		return -ENOMEM;
	tb->tool_fd = tb->listen_fd = tb->stop_fd = -1;
	tb->outlog_fd = cfg->outlog_fd;
	tb->deadline_ms = cfg->deadline_ms;
	tb->webhook = cfg->webhook;
	tb->rate = (bucket){RATE_BURST, mono_ms()};
	tb->call_rate = (bucket){CALL_BURST, mono_ms()};
	for (int i = 0; i < MAX_CONNS; i++)
		tb->conns[i].fd = -1;
	tb->events = json_array();
	tb->calls = json_array();
	tb->remembered = json_object();
	tb->order = json_array();
	if ((tb->run_id = strdup(cfg->run_id)) == NULL || tb->events == NULL ||
	    tb->calls == NULL || tb->remembered == NULL || tb->order == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	if ((rc = load_context(tb, cfg)) < 0)
		goto fail;
	json_t *ops = NULL;
	rc = al_record_file_read_json(cfg->run_dirfd, AL_RF_OPERATIONS, 1u << 20, &ops);
	tb->ops = rc == 0 ? ops : json_object();
	if (rc < 0 && rc != -ENOENT)
		goto fail;
	if (mkdirat(cfg->run_dirfd, AL_RF_TOOL, 0711) < 0 && errno != EEXIST) {
		rc = -errno;
		goto fail;
	}
	tb->tool_fd = openat(cfg->run_dirfd, AL_RF_TOOL,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tb->tool_fd < 0 || fchmod(tb->tool_fd, 0711) < 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = new_token(token_out)) < 0 ||
	    (rc = write_token(tb->tool_fd, token_out, (uid_t)-1, (gid_t)-1)) < 0)
		goto fail;
	if ((tb->listen_fd = listen_socket(tb->tool_fd)) < 0) {
		rc = tb->listen_fd;
		goto fail;
	}
	if ((tb->stop_fd = eventfd(0, EFD_CLOEXEC)) < 0) {
		rc = -errno;
		goto fail;
	}
	if (pthread_create(&tb->thread, NULL, server_main, tb) != 0) {
		rc = -EAGAIN;
		goto fail;
	}
	tb->running = true;
	*out = tb;
	return 0;
fail:
	explicit_bzero(token_out, AL_TOOL_TOKEN_HEX + 1);
	tb_free(tb);
	return rc;
}

static char *dump_or_null(const json_t *v, bool nonempty_array)
{
	if (v == NULL || (nonempty_array && json_array_size(v) == 0))
		return NULL;
	return json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

int al_toolbelt_finish(al_toolbelt *tb, al_result *res)
{
	if (tb == NULL)
		return 0;
	if (tb->running) {
		uint64_t one = 1;
		if (write(tb->stop_fd, &one, sizeof(one)) < 0) {
			/* an eventfd write cannot fail here */
		}
		pthread_join(tb->thread, NULL);
		tb->running = false;
	}
	/* No request is answered from here on: the socket and the
	 * credential go. */
	unlinkat(tb->tool_fd, AL_TOOL_SOCK_NAME, 0);
	unlinkat(tb->tool_fd, AL_TOOL_TOKEN_NAME, 0);
	int rc = 0;
	if (res != NULL) {
		al_toolbelt_result_free(res);
		res->events_json = dump_or_null(tb->events, true);
		res->declaration_json = dump_or_null(tb->declaration, false);
		res->host_calls_json = dump_or_null(tb->calls, true);
		const char *o = json_string_value(
			json_object_get(tb->declaration, "outcome"));
		/* The declaration takes effect now that the process is seen
		 * to have finished: only `failed`, and only over a run
		 * that would otherwise have completed. */
		if (o != NULL && strcmp(o, "failed") == 0 &&
		    res->outcome == AL_OUTCOME_COMPLETED)
			rc = al_result_set_outcome(res, AL_OUTCOME_FAILED,
						   "declared");
	}
	tb_free(tb);
	return rc;
}
