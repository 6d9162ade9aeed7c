/* The HTTP routes of airlockd (docs/api.md).  Every answer is typed JSON;
 * unknown paths answer 404 and known paths with a wrong method 405.  The
 * tenant comes from the bearer token only.  Everything decidable from the
 * headers (route, method, body size and type, query, token) is decided
 * before a byte of the body is read. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <airlock/json.h>

#include "core/log.h"
#include "core/util.h"
#include "child/artifacts.h"
#include "server/audit_view.h"
#include "server/compat.h"
#include "server/conns.h"
#include "server/http.h"
#include "server/rate.h"
#include "server/fleet.h"
#include "server/run_filter.h"
#include "server/ui.h"

#define DEFAULT_LIST_LIMIT 50u
#define MAX_LIST_LIMIT 1000u

typedef struct req_ctx {
	char *body;
	size_t len, cap;
	size_t expected; /* Content-Length, 0 when absent (chunked) */
	size_t dropped;	 /* bytes discarded past the bound */
	bool too_large;
	bool oom;
	/* For the access line and the request's log lines (docs/serve.md,
	 * "Logs"): */
	bool admitted; /* past the first call's checks */
	char request_id[65];
	char traceparent[56]; /* W3C traceparent, "" when none or invalid */
	char trace_id[33];
	char method[16];
	char *path;
	char tenant[256];
	char run_id[40];
	unsigned status; /* 0: no answer queued */
	uint64_t bytes;
	bool streamed; /* bytes unknown (server-sent events) */
	int64_t t0_ms;
} req_ctx;

/* The request the calling thread is answering: libmicrohttpd calls the
 * access handler on one thread for the whole of a call, and the answer is
 * queued within it, so the queueing helpers find it here. */
static _Thread_local req_ctx *cur_req;

enum route {
	R_NONE = 0,
	R_HEALTH,
	R_METRICS,
	R_CAPABILITIES,
	R_RUNS,
	R_RUN,
	R_RUN_EVENTS,
	R_RUN_INTERRUPT,
	R_RUN_INBOX,
	R_RUN_ARTIFACT,
	R_AUDIT,
	R_UI, /* the web console's static files: public, no token */
	R_COMPAT /* Piston and Judge0 (compat.h): their own rules */
};

/* An inbox body: {"id", "event"} with the event's JSON at most 64 KiB. */
#define MAX_INBOX_BODY (AL_MAX_INBOX_EVENT_BYTES + 1024u)

void al_http_answer(struct MHD_Response *resp, unsigned status, uint64_t bytes,
		    bool streamed)
{
	req_ctx *rc = cur_req;
	if (rc == NULL)
		return;
	MHD_add_response_header(resp, "X-Request-Id", rc->request_id);
	rc->status = status;
	rc->bytes = bytes;
	rc->streamed = streamed;
}

static void add_common_headers(struct MHD_Response *resp,
			       const char *content_type)
{
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				content_type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
}

static enum MHD_Result queue_text(al_service *svc,
				  struct MHD_Connection *conn,
				  unsigned status, char *text,
				  const char *content_type,
				  const char *hname, const char *hvalue)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (text == NULL)
		return MHD_NO; /* allocation failure: drop the connection */
	resp = MHD_create_response_from_buffer(strlen(text), text,
					       MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(text);
		return MHD_NO;
	}
	add_common_headers(resp, content_type);
	if (hname != NULL)
		MHD_add_response_header(resp, hname, hvalue);
	al_http_answer(resp, status, strlen(text), false);
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	al_srv_metrics_http(svc->metrics, status);
	return ret;
}

enum MHD_Result al_http_json(al_service *svc, struct MHD_Connection *conn,
			     unsigned status, char *text)
{
	return queue_text(svc, conn, status, text, "application/json", NULL,
			  NULL);
}

static char *error_body(unsigned status, const char *code,
			const char *message)
{
	json_t *o = json_pack("{s:s, s:s, s:i}", "error", code, "message",
			      message, "status", (int)status);
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

enum MHD_Result al_http_error(al_service *svc, struct MHD_Connection *conn,
			      unsigned status, const char *code,
			      const char *message)
{
	return al_http_json(svc, conn, status,
			    error_body(status, code, message));
}

static enum MHD_Result error_with_header(al_service *svc,
					 struct MHD_Connection *conn,
					 unsigned status, const char *code,
					 const char *message,
					 const char *hname,
					 const char *hvalue)
{
	return queue_text(svc, conn, status, error_body(status, code, message),
			  "application/json", hname, hvalue);
}

/* A run id as the host makes them: short, [A-Za-z0-9_-]. */
static bool valid_run_id(const char *s, size_t len)
{
	if (len == 0 || len >= 40)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return false;
	}
	return true;
}

/* Routes url; a run route copies the id into run_id[40] (an artifact
 * route its artifact id into artifact[33]).  R_NONE for an unknown path
 * (an invalid id included: no such resource). */
static enum route route_of(const char *url, char run_id[40], char artifact[33])
{
	static const char art[] = "/artifacts/";
	static const char runs[] = "/v1/runs/";
	if (strcmp(url, "/v1/health") == 0)
		return R_HEALTH;
	if (strcmp(url, "/metrics") == 0)
		return R_METRICS;
	if (strcmp(url, "/v1/capabilities") == 0)
		return R_CAPABILITIES;
	if (strcmp(url, "/v1/runs") == 0)
		return R_RUNS;
	if (strcmp(url, "/v1/audit") == 0)
		return R_AUDIT;
	if (al_ui_route(url))
		return R_UI;
	if (al_compat_match(url) != AL_COMPAT_NONE)
		return R_COMPAT;
	if (strncmp(url, runs, sizeof(runs) - 1) != 0)
		return R_NONE;
	const char *id = url + sizeof(runs) - 1, *slash = strchr(id, '/');
	size_t len = slash ? (size_t)(slash - id) : strlen(id);
	if (!valid_run_id(id, len))
		return R_NONE;
	memcpy(run_id, id, len);
	run_id[len] = '\0';
	if (slash == NULL)
		return R_RUN;
	if (strcmp(slash, "/events") == 0)
		return R_RUN_EVENTS;
	if (strcmp(slash, "/interrupt") == 0)
		return R_RUN_INTERRUPT;
	if (strcmp(slash, "/inbox") == 0)
		return R_RUN_INBOX;
	if (strncmp(slash, art, sizeof(art) - 1) == 0 &&
	    al_artifact_id_valid(slash + sizeof(art) - 1)) {
		snprintf(artifact, 33, "%s", slash + sizeof(art) - 1);
		return R_RUN_ARTIFACT;
	}
	return R_NONE;
}

static const char *allowed_methods(enum route r)
{
	switch (r) {
	case R_RUNS:
		return "GET, HEAD, POST";
	case R_RUN_INTERRUPT:
	case R_RUN_INBOX:
		return "POST";
	default:
		return "GET, HEAD";
	}
}

/* HEAD is GET without the body (libmicrohttpd sends the headers only). */
static bool is_get(const char *method)
{
	return strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
}

static bool method_allowed(enum route r, const char *method)
{
	bool post_only = r == R_RUN_INTERRUPT || r == R_RUN_INBOX;
	if (is_get(method))
		return !post_only;
	if (strcmp(method, "POST") == 0)
		return r == R_RUNS || post_only;
	return false;
}

/* The routes that read a body: its text is JSON. */
static bool takes_body(enum route r, const char *method)
{
	if (r == R_COMPAT) /* Piston's DELETE /api/v2/packages has one */
		return strcmp(method, "POST") == 0 ||
		       strcmp(method, "PUT") == 0 ||
		       strcmp(method, "DELETE") == 0;
	return (r == R_RUNS || r == R_RUN_INBOX) &&
	       strcmp(method, "POST") == 0;
}

/* The body bound of a route. */
static size_t body_limit(const al_service *svc, enum route r)
{
	return r == R_RUN_INBOX ? MAX_INBOX_BODY : svc->opts.max_body_bytes;
}

/* A refusal decided from the request's head. */
typedef struct refusal {
	unsigned status;
	const char *code, *message;
} refusal;

static bool refuse(refusal *out, unsigned status, const char *code,
		   const char *message)
{
	*out = (refusal){status, code, message};
	return false;
}

/* Headers whose meaning is ambiguous when repeated: which one would a
 * proxy in front have checked? */
static const char *const single_headers[] = {
	MHD_HTTP_HEADER_AUTHORIZATION,	   MHD_HTTP_HEADER_CONTENT_LENGTH,
	MHD_HTTP_HEADER_CONTENT_TYPE,	   MHD_HTTP_HEADER_TRANSFER_ENCODING,
	MHD_HTTP_HEADER_HOST,		   "X-Airlock-Run-Id",
	"X-Airlock-Forwarded-Env",	   "Last-Event-ID",
};
#define N_SINGLE (sizeof(single_headers) / sizeof(single_headers[0]))

typedef struct head_scan {
	unsigned seen[N_SINGLE];
	const char *allowed[6]; /* query names this route takes */
	bool repeated_header, repeated_query, unknown_query, no_value, nul;
	char names[6][16]; /* query names seen (the allowed ones only) */
	unsigned n_names;
} head_scan;

/* libmicrohttpd passes each name and value with its size: a NUL inside
 * one makes it longer than C sees it. */
static bool cut_by_nul(const char *key, size_t key_size, const char *value,
		       size_t value_size)
{
	return strlen(key) != key_size ||
	       (value != NULL && strlen(value) != value_size);
}

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind,
				   const char *key, size_t key_size,
				   const char *value, size_t value_size)
{
	head_scan *h = cls;
	(void)kind;
	if (cut_by_nul(key, key_size, value, value_size))
		h->nul = true;
	for (size_t i = 0; i < N_SINGLE; i++)
		if (strcasecmp(key, single_headers[i]) == 0 &&
		    ++h->seen[i] > 1)
			h->repeated_header = true;
	return MHD_YES;
}

static enum MHD_Result scan_query(void *cls, enum MHD_ValueKind kind,
				  const char *key, size_t key_size,
				  const char *value, size_t value_size)
{
	head_scan *h = cls;
	(void)kind;
	if (cut_by_nul(key, key_size, value, value_size))
		h->nul = true;
	bool known = false;
	for (size_t i = 0; i < 6 && h->allowed[i] != NULL; i++)
		known = known || strcmp(key, h->allowed[i]) == 0;
	if (!known) {
		h->unknown_query = true;
		return MHD_YES;
	}
	if (value == NULL)
		h->no_value = true;
	for (unsigned i = 0; i < h->n_names; i++)
		if (strcmp(h->names[i], key) == 0)
			h->repeated_query = true;
	if (h->n_names < 6)
		snprintf(h->names[h->n_names++], sizeof(h->names[0]), "%s",
			 key);
	return MHD_YES;
}

/* Content-Type: application/json, optionally with parameters; a charset
 * must be UTF-8 (RFC 8259). */
static bool json_content_type(const char *ct)
{
	static const char mt[] = "application/json";
	char buf[256], *save = NULL;
	if (ct == NULL || strlen(ct) >= sizeof(buf) ||
	    strncasecmp(ct, mt, sizeof(mt) - 1) != 0)
		return false;
	snprintf(buf, sizeof(buf), "%s", ct + sizeof(mt) - 1);
	char *rest = buf + strspn(buf, " \t");
	if (*rest == '\0')
		return true;
	if (*rest != ';')
		return false;
	for (char *p = strtok_r(rest, ";", &save); p != NULL;
	     p = strtok_r(NULL, ";", &save)) {
		p += strspn(p, " \t");
		if (strncasecmp(p, "charset=", 8) != 0)
			continue;
		p += 8;
		size_t n = strcspn(p, " \t");
		if (!((n == 5 && strncasecmp(p, "utf-8", 5) == 0) ||
		      (n == 7 && strncasecmp(p, "\"utf-8\"", 7) == 0)))
			return false;
		if (p[n + strspn(p + n, " \t")] != '\0')
			return false;
	}
	return true;
}

/* Checks what the request's head says about its body and query; false
 * with *why filled when the request must be refused before the body is
 * read. */
static bool head_ok(al_service *svc, struct MHD_Connection *conn,
		    enum route r, const char *method, refusal *why)
{
	head_scan h = {0};
	bool post = strcmp(method, "POST") == 0;
	if (r == R_RUNS && !post) {
		static const char *const q[] = {"limit",    "after", "outcome",
						"language", "since", "until"};
		memcpy(h.allowed, q, sizeof(q));
	} else if (r == R_AUDIT) {
		h.allowed[0] = "limit";
		h.allowed[1] = "before";
		h.allowed[2] = "run_id";
	} else if ((r == R_RUNS && post) || r == R_RUN_INTERRUPT) {
		h.allowed[0] = "wait";
	}
	MHD_get_connection_values_n(conn, MHD_HEADER_KIND, scan_header, &h);
	MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, scan_query,
				    &h);
	if (h.nul)
		return refuse(why, 400, "invalid_request",
			      "a header or query parameter holds a NUL");
	if (h.repeated_header)
		return refuse(why, 400, "invalid_header",
			      "a header that must appear once is repeated");
	/* The compat routes read their query as Piston and Judge0 do
	 * (compat_http.c); the header checks hold for them too. */
	if (r == R_COMPAT)
		h.repeated_query = h.unknown_query = h.no_value = false;
	if (h.repeated_query)
		return refuse(why, 400, "invalid_query",
			      "a query parameter is repeated");
	if (h.unknown_query)
		return refuse(why, 400, "invalid_query",
			      "unknown query parameter");
	if (h.no_value)
		return refuse(why, 400, "invalid_query",
			      "a query parameter has no value");

	const char *te = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
	const char *cl = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (te != NULL && strcasecmp(te, "chunked") != 0)
		return refuse(why, 400, "invalid_header",
			      "Transfer-Encoding: only chunked is accepted");
	if (te != NULL && cl != NULL)
		return refuse(why, 400, "invalid_header",
			      "both Content-Length and Transfer-Encoding");
	/* libmicrohttpd has checked that cl is digits. */
	unsigned long long len = cl != NULL ? strtoull(cl, NULL, 10) : 0;
	if (!takes_body(r, method)) {
		if (te != NULL || len > 0)
			return refuse(why, 413, "body_not_allowed",
				      "this endpoint takes no request body");
		return true;
	}
	if (len > body_limit(svc, r))
		return refuse(why, 413, "body_too_large", NULL);
	return true;
}

/* "true"/"false" (also 1/0); absent: dflt.  -1 when malformed. */
static int bool_arg(struct MHD_Connection *conn, const char *name, int dflt)
{
	const char *v =
		MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
	if (v == NULL)
		return dflt;
	if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
		return 1;
	if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
		return 0;
	return -1;
}

/* A stored result as the answer: from its file (sent from the
 * descriptor, never held in memory) or from the table's small text. */
static enum MHD_Result queue_stored(al_service *svc,
				    struct MHD_Connection *conn,
				    unsigned status, al_srv_stored *st)
{
	const char *retry = status == 429 ? "1" : NULL;
	if (st->fd < 0) {
		char *text = st->text;
		st->text = NULL;
		return queue_text(svc, conn, status, text, "application/json",
				  retry ? "Retry-After" : NULL, retry);
	}
	struct MHD_Response *resp =
		MHD_create_response_from_fd(st->size, st->fd);
	if (resp == NULL)
		return MHD_NO; /* st still owns the descriptor */
	st->fd = -1;
	add_common_headers(resp, "application/json");
	if (retry != NULL)
		MHD_add_response_header(resp, "Retry-After", retry);
	al_http_answer(resp, status, st->size, false);
	enum MHD_Result ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	al_srv_metrics_http(svc->metrics, status);
	return ret;
}

/* The run's state, or its result once finished.  as_stored: 200 (a
 * read); else the status the outcome maps to (the run's own answer).
 * run: the table's entry, or NULL for a run only the disk knows. */
static enum MHD_Result answer_result(al_service *svc,
				     struct MHD_Connection *conn,
				     const char *tenant, const char *run_id,
				     al_srv_run *run, bool as_stored)
{
	unsigned status = 200;
	bool done = true;
	if (run != NULL) {
		pthread_mutex_lock(&svc->lock);
		done = run->state == AL_SRV_RUN_DONE;
		status = done && !as_stored ? run->status : 200;
		pthread_mutex_unlock(&svc->lock);
	}
	if (!done) {
		json_t *o = json_pack("{s:s, s:s}", "run_id", run_id, "state",
				      "running");
		char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		return al_http_json(svc, conn, 200, text);
	}
	al_srv_stored st;
	int rc = al_service_stored_result(svc, tenant, run_id, run, &st);
	if (rc == -ENOMEM)
		return al_http_error(svc, conn, 503, "unavailable",
				     "out of memory");
	/* Another tenant's run answers exactly like an unknown one. */
	if (rc < 0)
		return al_http_error(svc, conn, 404, "not_found",
				     "no such run");
	enum MHD_Result ret = queue_stored(svc, conn, status, &st);
	al_srv_stored_clear(&st);
	return ret;
}

static enum MHD_Result post_run(al_service *svc, struct MHD_Connection *conn,
				const char *tenant, const char *principal,
				req_ctx *rc)
{
	int wait = bool_arg(conn, "wait", 1);
	al_srv_run *run = NULL;
	enum MHD_Result ret;

	if (wait < 0)
		return al_http_error(svc, conn, 400, "invalid_query",
				     "wait: expected true or false");
	if (rc->oom)
		return al_http_error(svc, conn, 503, "unavailable",
				     "out of memory reading the body");
	/* The caller's run id and forwarded environment (the remote
	 * provider's; docs/api.md) go to the admission, which checks them;
	 * neither is ever echoed. */
	al_srv_submit_headers hdrs = {
		.run_id = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						      "X-Airlock-Run-Id"),
		.forwarded_env = MHD_lookup_connection_value(
			conn, MHD_HEADER_KIND, "X-Airlock-Forwarded-Env"),
		.traceparent = rc->traceparent[0] ? rc->traceparent : NULL,
	};
	/* A fleet node queues the run in the store (docs/scale-out.md). */
	if (svc->fleet != NULL)
		return al_fleet_post(svc, conn, tenant, principal,
				     rc->body ? rc->body : "", rc->len,
				     wait == 1, hdrs.run_id,
				     hdrs.forwarded_env);
	al_srv_gen *gen = al_service_gen_get(svc);
	int err = gen ? al_service_submit(svc, gen, tenant, principal,
					  rc->body ? rc->body : "", rc->len,
					  &hdrs, &run)
		      : -ESHUTDOWN;
	al_service_gen_put(svc, gen);
	if (err == -ESHUTDOWN)
		return al_http_error(svc, conn, 503, "shutting_down",
				     "the service is shutting down");
	if (err < 0)
		return al_http_error(svc, conn, 503, "unavailable",
				     "cannot start the run");
	al_service_wait(svc, run, wait == 1);

	pthread_mutex_lock(&svc->lock);
	/* A refusal names its run before it is published: wait=false
	 * answers once the run is persisted (admitted) or finished, so a
	 * refusal is answered as such. */
	while (run->state != AL_SRV_RUN_DONE && !run->has_dir &&
	       !svc->closing)
		pthread_cond_wait(&run->changed, &svc->lock);
	bool done = run->state == AL_SRV_RUN_DONE, named = run->run_id[0];
	/* A refusal (invalid JSON, denied, busy...) is decided before the
	 * run starts: it is the answer even when the caller did not wait. */
	bool refused = done && run->status != 200;
	char run_id[40];
	memcpy(run_id, run->run_id, sizeof(run_id));
	pthread_mutex_unlock(&svc->lock);
	memcpy(rc->run_id, run_id, sizeof(run_id));

	if (wait == 0 && named && !refused) {
		json_t *o = json_pack("{s:s, s:s}", "run_id", run_id, "state",
				      done ? "finished" : "running");
		char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		ret = al_http_json(svc, conn, 202, text);
	} else if (done) {
		ret = answer_result(svc, conn, tenant, run_id, run, false);
	} else {
		ret = al_http_error(svc, conn, 503, "shutting_down",
				    "the service closed before the run "
				    "ended");
	}
	al_service_run_put(svc, run);
	return ret;
}

static const char *query(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, name);
}

/* A page size, 1..1000; absent: *limit stays the default. */
static bool list_limit(const char *lim, size_t *limit)
{
	if (lim == NULL)
		return true;
	char *end;
	errno = 0;
	unsigned long v = strtoul(lim, &end, 10);
	if (errno || end == lim || *end || lim[0] == '-' || v == 0 ||
	    v > MAX_LIST_LIMIT)
		return false;
	*limit = v;
	return true;
}

/* GET /v1/audit: the tenant's own records and the chain's verify
 * status. */
static enum MHD_Result audit(al_service *svc, struct MHD_Connection *conn,
			     const char *tenant)
{
	const char *lim = query(conn, "limit"), *before = query(conn, "before");
	size_t limit = DEFAULT_LIST_LIMIT;
	long long seq = 0;
	char *text = NULL;
	if (!list_limit(lim, &limit))
		return al_http_error(svc, conn, 400, "invalid_query",
				     "limit: expected an integer "
				     "from 1 to 1000");
	if (before != NULL) {
		char *end;
		errno = 0;
		seq = strtoll(before, &end, 10);
		if (errno || end == before || *end || before[0] == '-' ||
		    before[0] == '+' || seq < 1)
			return al_http_error(svc, conn, 400, "invalid_query",
					     "before: expected a record's "
					     "seq (a positive integer)");
	}
	const char *run_id = query(conn, "run_id");
	if (run_id != NULL && !valid_run_id(run_id, strlen(run_id)))
		return al_http_error(svc, conn, 400, "invalid_query",
				     "run_id: not a run id");
	int rc = al_audit_view(svc->opts.state_dir, tenant, run_id, limit, seq,
			       &text);
	if (rc == -ENOMEM)
		return al_http_error(svc, conn, 503, "unavailable",
				     "out of memory");
	if (rc < 0)
		return al_http_error(svc, conn, 503, "unavailable",
				     "cannot read the audit trail");
	return al_http_json(svc, conn, 200, text);
}

static enum MHD_Result list_runs(al_service *svc, struct MHD_Connection *conn,
				 const char *tenant)
{
	const char *lim = query(conn, "limit"), *after = query(conn, "after");
	size_t limit = DEFAULT_LIST_LIMIT;
	char *text = NULL;
	al_run_filter filter;
	const char *why = NULL;

	if (!list_limit(lim, &limit))
		return al_http_error(svc, conn, 400, "invalid_query",
				     "limit: expected an integer "
				     "from 1 to 1000");
	if (after != NULL && !valid_run_id(after, strlen(after)))
		return al_http_error(svc, conn, 400, "invalid_query",
				     "after: not a run id");
	if (al_run_filter_parse(&filter, query(conn, "outcome"),
				query(conn, "language"), query(conn, "since"),
				query(conn, "until"), &why) < 0)
		return al_http_error(svc, conn, 400, "invalid_query", why);
	/* A fleet node lists the fleet's runs (docs/scale-out.md). */
	if (svc->fleet != NULL)
		return al_fleet_list(svc, conn, tenant, limit, after, &filter);
	int rc = al_service_list(svc, tenant, limit, after, &filter, &text);
	if (rc == -ENOENT)
		return al_http_error(svc, conn, 400, "invalid_query",
				     "after: no such run");
	if (rc < 0)
		return al_http_error(svc, conn, 503, "unavailable",
				     "out of memory");
	return al_http_json(svc, conn, 200, text);
}

/* Joins each provider's facts JSON into {"providers": [...]}. */
static char *capabilities_json(al_facts **facts, size_t n)
{
	json_t *arr = json_array(), *doc = NULL;
	char *out = NULL;
	for (size_t i = 0; arr != NULL && i < n; i++) {
		char *f = al_facts_to_json(facts[i], 0);
		json_t *o = f ? json_loads(f, 0, NULL) : NULL;
		free(f);
		if (o == NULL || json_array_append_new(arr, o) < 0)
			goto out;
	}
	if (arr != NULL && (doc = json_pack("{s:O}", "providers", arr)) != NULL)
		out = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
out:
	json_decref(doc);
	json_decref(arr);
	return out;
}

static enum MHD_Result capabilities(al_service *svc,
				    struct MHD_Connection *conn,
				    const char *tenant)
{
	al_host_context hc = {.tenant = tenant, .principal = NULL};
	al_facts **facts = NULL;
	size_t n = 0;
	al_error *err = NULL;
	al_srv_gen *gen = al_service_gen_get(svc);
	int rc = gen ? al_host_capabilities(gen->host, &hc, &facts, &n, &err)
		     : -ESHUTDOWN;
	al_service_gen_put(svc, gen);
	if (rc < 0) {
		al_error_free(err);
		return al_http_error(svc, conn, 503, "unavailable",
				     "cannot probe the providers");
	}
	char *text = capabilities_json(facts, n);
	al_facts_array_free(facts, n);
	return al_http_json(svc, conn, 200, text);
}

static bool storage_writable(const char *state_dir)
{
	char *path = al_strdup_printf("%s/.health-XXXXXX", state_dir);
	if (path == NULL)
		return false;
	int fd = mkstemp(path);
	bool ok = fd >= 0 && write(fd, "ok", 2) == 2;
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	free(path);
	return ok;
}

static void process_stats(const al_http *h, al_srv_process_stats *ps)
{
	al_conns_stats cs = {0};
	if (h->conns != NULL)
		al_conns_stats_get(h->conns, &cs);
	*ps = (al_srv_process_stats){
		.connections = cs.open,
		.max_connections = h->max_connections,
		.header_timeouts = cs.header_timeouts,
		.body_timeouts = cs.body_timeouts,
	};
	al_srv_fd_usage(&ps->open_fds, &ps->max_fds);
}

static enum MHD_Result health(const al_http *h, struct MHD_Connection *conn)
{
	al_service *svc = h->svc;
	al_srv_process_stats ps;
	process_stats(h, &ps);
	bool storage = storage_writable(svc->opts.state_dir), provider = false;
	al_srv_gen *gen = al_service_gen_get(svc);
	pthread_mutex_lock(&svc->lock);
	bool draining = svc->draining;
	pthread_mutex_unlock(&svc->lock);
	const char *tenant = gen ? al_auth_any_tenant(gen->auth) : NULL;
	if (tenant != NULL) {
		al_host_context hc = {.tenant = tenant, .principal = NULL};
		al_facts **facts = NULL;
		size_t n = 0;
		al_error *err = NULL;
		if (al_host_capabilities(gen->host, &hc, &facts, &n, &err) ==
		    0)
			for (size_t i = 0; i < n; i++)
				provider = provider || facts[i]->available;
		al_facts_array_free(facts, n);
		al_error_free(err);
	}
	al_service_gen_put(svc, gen);
	bool ready = storage && provider && !draining;
	json_t *o = json_pack("{s:s, s:b, s:b, s:{s:b, s:b, s:b}, "
			      "s:{s:I, s:I, s:I, s:I}, s:I}",
			      "status", ready ? "ok" : "unavailable", "live", 1,
			      "ready", ready, "checks", "storage_writable",
			      storage, "provider_available", provider,
			      "accepting_runs", !draining, "resources",
			      "open_fds", (json_int_t)ps.open_fds, "max_fds",
			      (json_int_t)ps.max_fds, "connections",
			      (json_int_t)ps.connections, "max_connections",
			      (json_int_t)ps.max_connections, "records_pending",
			      (json_int_t)al_srv_metrics_pending_count(
				      svc->metrics));
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return al_http_json(svc, conn, ready ? 200 : 503, text);
}

static enum MHD_Result metrics(const al_http *h, struct MHD_Connection *conn)
{
	al_service *svc = h->svc;
	al_srv_process_stats ps;
	process_stats(h, &ps);
	ps.resident_bytes = al_srv_resident_bytes();
	al_durable_spares_counts(svc->durable, &ps.spare_dirs_taken,
				 &ps.spare_dirs_missed);
	pthread_mutex_lock(&svc->lock);
	unsigned active = svc->active;
	pthread_mutex_unlock(&svc->lock);
	al_srv_gen *gen = al_service_gen_get(svc);
	char *host_text = gen ? al_host_metrics_text(gen->host) : NULL;
	al_srv_tenant_runs *tenants = NULL;
	size_t n_tenants = 0;
	int trc = al_srv_tenant_runs_collect(svc, gen, &tenants, &n_tenants);
	al_service_gen_put(svc, gen);
	al_idle_stats idle;
	if (svc->idle_sups != NULL)
		al_idle_pool_stats(svc->idle_sups, &idle);
	char *text = trc < 0 ? NULL
			     : al_srv_metrics_text(
				       svc->metrics, active,
				       svc->idle_sups != NULL ? &idle : NULL,
				       &ps, tenants, n_tenants, host_text);
	al_srv_tenant_runs_free(tenants, n_tenants);
	free(host_text);
	return queue_text(svc, conn, 200, text,
			  "text/plain; version=0.0.4; charset=utf-8", NULL,
			  NULL);
}

static enum MHD_Result run_state_answer(al_service *svc,
					struct MHD_Connection *conn,
					unsigned status, const char *run_id,
					const char *state, const char *event)
{
	json_t *o = json_pack("{s:s, s:s}", "run_id", run_id, "state", state);
	if (o != NULL && event != NULL)
		json_object_set_new(o, "id", json_string(event));
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return al_http_json(svc, conn, status, text);
}

static enum MHD_Result interrupt(al_service *svc, struct MHD_Connection *conn,
				 const char *tenant, al_srv_run *run,
				 const char *run_id)
{
	/* wait=true is a stop: it answers once the tree is verified gone,
	 * with the result. */
	int wait = bool_arg(conn, "wait", 0);
	if (wait < 0)
		return al_http_error(svc, conn, 400, "invalid_query",
				     "wait: expected true or false");
	int rc = al_service_interrupt(svc, run, wait == 1);
	if (rc == -EALREADY)
		return al_http_error(svc, conn, 409, "run_finished",
				     "the run has already finished");
	if (rc == -EPERM)
		return al_http_error(svc, conn, 409, "superseded",
				     "a newer airlockd owns this run");
	if (wait == 0)
		return run_state_answer(svc, conn, 202, run_id, "interrupting",
					NULL);
	al_service_wait(svc, run, true);
	pthread_mutex_lock(&svc->lock);
	bool done = run->state == AL_SRV_RUN_DONE;
	pthread_mutex_unlock(&svc->lock);
	if (!done)
		return al_http_error(svc, conn, 503, "shutting_down",
				     "the service closed before the run "
				     "ended");
	return answer_result(svc, conn, tenant, run_id, run, true);
}

/* {"id": "<event id>", "event": {...}}: strict, values never echoed. */
static const char *parse_event(const req_ctx *rc, char **id, char **event)
{
	json_error_t jerr;
	const char *why = NULL;
	*id = *event = NULL;
	/* memchr: jansson 2.14 skips a raw NUL byte after a number. */
	json_t *o = rc->body != NULL && memchr(rc->body, '\0', rc->len) == NULL
			    ? json_loadb(rc->body, rc->len,
					 JSON_REJECT_DUPLICATES, &jerr)
			    : NULL;
	if (!json_is_object(o)) {
		why = "body: expected a JSON object";
		goto out;
	}
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v)
	{
		if (strcmp(key, "id") != 0 && strcmp(key, "event") != 0) {
			why = "body: unknown field";
			goto out;
		}
	}
	json_t *idv = json_object_get(o, "id"), *ev = json_object_get(o, "event");
	if (!json_is_string(idv) ||
	    strlen(json_string_value(idv)) != json_string_length(idv) ||
	    !al_inbox_id_valid(json_string_value(idv))) {
		why = "id: expected [A-Za-z0-9_-]{1,64}";
		goto out;
	}
	if (!json_is_object(ev)) {
		why = "event: expected a JSON object";
		goto out;
	}
	char *ev_text = json_dumps(ev, JSON_COMPACT);
	bool ev_ok = ev_text != NULL;
	size_t ev_len = ev_ok ? strlen(ev_text) : 0;
	free(ev_text);
	json_t *rec = json_pack("{s:O, s:O}", "id", idv, "event", ev);
	*event = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
	json_decref(rec);
	if (*event == NULL || !ev_ok) {
		why = "";
	} else if (ev_len > AL_MAX_INBOX_EVENT_BYTES) {
		why = "event: larger than 64 KiB";
	} else if ((*id = strdup(json_string_value(idv))) == NULL) {
		why = "";
	}
out:
	if (why != NULL) {
		free(*event);
		*event = NULL;
	}
	json_decref(o);
	return why;
}

/* An inbox delivery's body, parsed: false with *answer the error sent. */
static bool read_inbox_body(al_service *svc, struct MHD_Connection *conn,
			    const req_ctx *rc, char **id, char **event,
			    enum MHD_Result *answer)
{
	if (rc->oom) {
		*answer = al_http_error(svc, conn, 503, "unavailable",
					"out of memory reading the body");
		return false;
	}
	const char *why = parse_event(rc, id, event);
	if (why == NULL)
		return true;
	*answer = why[0] ? al_http_error(svc, conn, 400, "invalid_event", why)
			 : al_http_error(svc, conn, 503, "unavailable",
					 "out of memory");
	return false;
}

static enum MHD_Result inbox(al_service *svc, struct MHD_Connection *conn,
			     al_srv_run *run, const char *run_id,
			     const req_ctx *rc)
{
	char *id = NULL, *event = NULL;
	enum MHD_Result ret;
	if (!read_inbox_body(svc, conn, rc, &id, &event, &ret))
		return ret;
	int r = al_service_deliver(svc, run, id, event);
	switch (r) {
	case 0:
		ret = run_state_answer(svc, conn, 202, run_id, "delivered", id);
		break;
	case 1:
		ret = run_state_answer(svc, conn, 200, run_id, "duplicate", id);
		break;
	case -EALREADY:
		ret = al_http_error(svc, conn, 409, "run_finished",
				    "the run's result is already recorded");
		break;
	case -EAGAIN:
		ret = al_http_error(svc, conn, 409, "not_started",
				    "the run has not started yet");
		break;
	case -EPERM:
		ret = al_http_error(svc, conn, 409, "superseded",
				    "a newer airlockd owns this run");
		break;
	case -ENOSPC:
		ret = al_http_error(svc, conn, 409, "inbox_full",
				    "the run's inbox holds 1024 events");
		break;
	default:
		ret = al_http_error(svc, conn, 503, "unavailable",
				    "the event could not be delivered");
		break;
	}
	free(id);
	free(event);
	return ret;
}

static enum MHD_Result fleet_inbox(al_service *svc,
				   struct MHD_Connection *conn,
				   const char *tenant, const char *run_id,
				   const req_ctx *rc)
{
	char *id = NULL, *event = NULL;
	enum MHD_Result ret;
	if (!read_inbox_body(svc, conn, rc, &id, &event, &ret))
		return ret;
	ret = al_fleet_inbox(svc, conn, tenant, run_id, id,
					     event);
	free(id);
	free(event);
	return ret;
}

/* One artifact of a run of this tenant (docs/workspaces.md), its bytes
 * as they are in the store: opened beneath the store without following a
 * link, and sent from that descriptor. */
static enum MHD_Result artifact(al_service *svc, struct MHD_Connection *conn,
				const char *root, const char *run_id,
				const char *id)
{
	int fd = al_artifact_open(root, run_id, id);
	if (fd < 0)
		return al_http_error(svc, conn, 404, "not_found",
				     "no such artifact");
	struct stat st;
	struct MHD_Response *resp = NULL;
	if (fstat(fd, &st) == 0)
		resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
	if (resp == NULL) {
		close(fd);
		return al_http_error(svc, conn, 503, "unavailable",
				     "cannot read the artifact");
	}
	/* The log is the program's output as text; outputs are bytes. */
	add_common_headers(resp, strcmp(id, AL_ARTIFACT_LOG) == 0
					 ? "text/plain; charset=utf-8"
					 : "application/octet-stream");
	MHD_add_response_header(resp, "Content-Disposition", "attachment");
	al_http_answer(resp, 200, (uint64_t)st.st_size, false);
	enum MHD_Result ret = MHD_queue_response(conn, 200, resp);
	MHD_destroy_response(resp);
	al_srv_metrics_http(svc->metrics, 200);
	return ret;
}

static enum MHD_Result run_route(al_service *svc, struct MHD_Connection *conn,
				 enum route r, const char *tenant,
				 const char *run_id, const char *artifact_id,
				 const req_ctx *rc)
{
	al_srv_run *run = al_service_find(svc, tenant, run_id);
	enum MHD_Result ret;
	/* A fleet node answers for a run it does not hold from the store
	 * (docs/scale-out.md). */
	if (svc->fleet != NULL && run == NULL && r != R_RUN_ARTIFACT)
		return r == R_RUN_INBOX
			       ? fleet_inbox(svc, conn, tenant, run_id, rc)
			       : al_fleet_run(svc, conn,
					      r == R_RUN	  ? 'g'
					      : r == R_RUN_EVENTS ? 'e'
								  : 'i',
					      tenant, run_id);
	/* What a run left is read as long as it is on disk, the table or
	 * not, and only by the tenant its durable record names; another
	 * tenant's run answers exactly like an unknown one. */
	if (r == R_RUN) {
		ret = answer_result(svc, conn, tenant, run_id, run, true);
		al_service_run_put(svc, run);
		return ret;
	}
	if (r == R_RUN_ARTIFACT) {
		const char *root = NULL;
		if (al_service_owns(svc, tenant, run_id, run) == 0)
			root = svc->opts.state_dir;
		else if (svc->fleet != NULL)
			root = al_fleet_artifacts_root(svc, tenant, run_id);
		if (root != NULL)
			ret = artifact(svc, conn, root, run_id, artifact_id);
		else
			ret = al_http_error(svc, conn, 404, "not_found",
					    "no such artifact");
		al_service_run_put(svc, run);
		return ret;
	}
	if (run == NULL || al_service_owns(svc, tenant, run_id, run) < 0) {
		al_service_run_put(svc, run);
		return al_http_error(svc, conn, 404, "not_found",
				     "no such run");
	}
	if (r == R_RUN_EVENTS)
		return al_http_events(svc, conn, run);
	if (r == R_RUN_INBOX)
		ret = inbox(svc, conn, run, run_id, rc);
	else
		ret = interrupt(svc, conn, tenant, run, run_id);
	al_service_run_put(svc, run);
	return ret;
}

/* Appends an upload chunk, keeping at most max bytes.  The buffer is
 * sized from Content-Length when there is one (no doubling past it). */
static void take_chunk(req_ctx *rc, const char *data, size_t len, size_t max)
{
	if (rc->too_large || rc->oom) {
		rc->dropped += len;
		return;
	}
	if (len > max - rc->len) {
		rc->too_large = true;
		rc->dropped = rc->len + len;
		free(rc->body);
		rc->body = NULL;
		rc->len = rc->cap = 0;
		return;
	}
	if (rc->len + len + 1 > rc->cap) {
		size_t cap = rc->cap ? rc->cap : 4096;
		if (rc->expected >= rc->len + len && rc->expected < max)
			cap = rc->expected + 1;
		while (cap < rc->len + len + 1)
			cap *= 2;
		char *p = realloc(rc->body, cap);
		if (p == NULL) {
			rc->oom = true;
			return;
		}
		rc->body = p;
		rc->cap = cap;
	}
	memcpy(rc->body + rc->len, data, len);
	rc->len += len;
	rc->body[rc->len] = '\0';
}

static enum MHD_Result too_large(al_service *svc, struct MHD_Connection *conn,
				 enum route r)
{
	char msg[96];
	snprintf(msg, sizeof(msg), "the request body exceeds %zu bytes",
		 body_limit(svc, r));
	return al_http_error(svc, conn, 413, "body_too_large", msg);
}

/* The tenant of the request's token, or NULL. */
static const char *token_tenant(al_service *svc, struct MHD_Connection *conn,
				char principal[AL_AUTH_PRINCIPAL_LEN],
				char *buf, size_t len)
{
	const char *tenant = NULL;
	al_srv_gen *gen = al_service_gen_get(svc);
	if (gen != NULL) {
		tenant = al_auth_tenant(
			gen->auth,
			MHD_lookup_connection_value(
				conn, MHD_HEADER_KIND,
				MHD_HTTP_HEADER_AUTHORIZATION),
			principal);
		if (tenant != NULL)
			snprintf(buf, len, "%s", tenant);
	}
	al_service_gen_put(svc, gen);
	return tenant != NULL ? buf : NULL;
}

/* Routes answered without a token: health, and the console's static
 * files (the data it shows comes from the API with the user's token). */
static bool public_route(enum route r)
{
	return r == R_HEALTH || r == R_UI || r == R_COMPAT;
}

static enum MHD_Result unauthorized(al_service *svc,
				    struct MHD_Connection *conn)
{
	return error_with_header(svc, conn, 401, "unauthorized",
				 "a valid bearer token is required",
				 MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
}

/* A caller's X-Request-Id is taken when it is short and plain. */
static bool plain_request_id(const char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;
	if (n == 0 || n > 64)
		return false;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			 "0123456789._-") == n;
}

static bool lower_hex(const char *s, size_t n, bool *all_zero)
{
	*all_zero = true;
	for (size_t i = 0; i < n; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
		if (s[i] != '0')
			*all_zero = false;
	}
	return true;
}

/* A W3C traceparent of version 00: "00-" 32 hex "-" 16 hex "-" 2 hex,
 * lower case, neither id all zeros. */
bool al_http_traceparent_valid(const char *s)
{
	bool zero;
	if (s == NULL || strlen(s) != 55 || strncmp(s, "00-", 3) != 0 ||
	    s[35] != '-' || s[52] != '-')
		return false;
	if (!lower_hex(s + 3, 32, &zero) || zero)
		return false;
	if (!lower_hex(s + 36, 16, &zero) || zero)
		return false;
	return lower_hex(s + 53, 2, &zero);
}

/* The request's id and trace, from its head, before anything can answer
 * it. */
static req_ctx *request_start(struct MHD_Connection *conn, const char *url,
			      const char *method, const char run_id[40])
{
	req_ctx *rc = calloc(1, sizeof(*rc));
	if (rc == NULL)
		return NULL;
	rc->t0_ms = al_mono_ms();
	const char *asked = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							"X-Request-Id");
	if (plain_request_id(asked)) {
		snprintf(rc->request_id, sizeof(rc->request_id), "%s", asked);
	} else {
		unsigned char b[8] = {0};
		/* Not a secret: a short read leaves zeros, still an id. */
		(void)!getrandom(b, sizeof(b), GRND_NONBLOCK);
		for (size_t i = 0; i < sizeof(b); i++)
			snprintf(rc->request_id + 2 * i, 3, "%02x", b[i]);
	}
	const char *tp = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						     "traceparent");
	if (al_http_traceparent_valid(tp)) {
		memcpy(rc->traceparent, tp, 55);
		memcpy(rc->trace_id, tp + 3, 32);
	}
	snprintf(rc->method, sizeof(rc->method), "%s", method);
	rc->path = strndup(url, 1024);
	memcpy(rc->run_id, run_id, sizeof(rc->run_id));
	return rc;
}

/* The first call, with the request's head only: everything refused here
 * is refused without reading the body. */
static enum MHD_Result first_call(const al_http *h, struct MHD_Connection *conn,
				  enum route r, const char *method, req_ctx *rc)
{
	al_service *svc = h->svc;
	refusal why;
	char principal[AL_AUTH_PRINCIPAL_LEN] = "", tenant[256];

	/* Answering from here on, unless a body is to be read. */
	al_conns_phase(h->conns, conn, AL_CONN_ANSWERING);
	if (r == R_NONE)
		return al_http_error(svc, conn, 404, "not_found",
				     "no such endpoint");
	if (r == R_COMPAT) {
		enum MHD_Result ret;
		if (al_compat_first(svc, conn, rc->path ? rc->path : "", method,
				    rc->tenant,
				    &ret))
			return ret;
	} else if (!method_allowed(r, method))
		return error_with_header(svc, conn, 405, "method_not_allowed",
					 "method not allowed on this endpoint",
					 MHD_HTTP_HEADER_ALLOW,
					 allowed_methods(r));
	if (!head_ok(svc, conn, r, method, &why))
		return why.message == NULL
			       ? too_large(svc, conn, r)
			       : al_http_error(svc, conn, why.status, why.code,
					       why.message);
	if (!public_route(r) && token_tenant(svc, conn, principal, tenant,
					     sizeof(tenant)) == NULL)
		return unauthorized(svc, conn);
	if (!public_route(r) && r != R_COMPAT)
		memcpy(rc->tenant, tenant, sizeof(rc->tenant));
	unsigned retry = public_route(r) ? 0 : al_srv_tenant_rate(svc, tenant);
	if (retry > 0) {
		char after[16];
		snprintf(after, sizeof(after), "%u", retry);
		al_srv_metrics_rate_limited(svc->metrics);
		return error_with_header(svc, conn, 429, "rate_limited",
					 "the tenant's request rate is spent",
					 "Retry-After", after);
	}
	if (r != R_COMPAT && takes_body(r, method) &&
	    !json_content_type(MHD_lookup_connection_value(
		    conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE)))
		return al_http_error(svc, conn, 415, "unsupported_media_type",
				     "the body must be application/json");
	const char *cl = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	rc->expected = cl != NULL ? (size_t)strtoull(cl, NULL, 10) : 0;
	rc->admitted = true;
	if (takes_body(r, method))
		al_conns_phase(h->conns, conn, AL_CONN_BODY);
	pthread_mutex_lock(&svc->lock);
	svc->requests++;
	pthread_mutex_unlock(&svc->lock);
	return MHD_YES;
}

static enum MHD_Result handle(const al_http *h, struct MHD_Connection *conn,
			      const char *url, const char *method,
			      const char *upload_data, size_t *upload_data_size,
			      req_ctx *rc)
{
	al_service *svc = h->svc;
	char run_id[40] = "", principal[AL_AUTH_PRINCIPAL_LEN] = "";
	char artifact_id[33] = "";
	enum route r = route_of(url, run_id, artifact_id);

	if (!rc->admitted)
		return first_call(h, conn, r, method, rc);
	if (*upload_data_size > 0) {
		size_t max = body_limit(svc, r);
		take_chunk(rc, upload_data, *upload_data_size, max);
		*upload_data_size = 0;
		/* A chunked body past twice the bound is not worth reading
		 * to its end for a 413: the connection is dropped. */
		return rc->dropped > 2 * (uint64_t)max ? MHD_NO : MHD_YES;
	}
	al_conns_phase(h->conns, conn, AL_CONN_ANSWERING);
	if (r == R_COMPAT)
		return al_compat_answer(svc, conn, url, method, rc->body,
					rc->len, rc->too_large, rc->oom);

	/* The whole request is in.  The token is checked again: a reload
	 * between the calls may have revoked it. */
	char tenant_buf[256] = "";
	const char *tenant = token_tenant(svc, conn, principal, tenant_buf,
					  sizeof(tenant_buf));
	if (!public_route(r) && tenant == NULL)
		return unauthorized(svc, conn);
	switch (r) {
	case R_HEALTH:
		return health(h, conn);
	case R_UI:
		return al_ui_answer(svc, conn, url);
	case R_AUDIT:
		return audit(svc, conn, tenant_buf);
	case R_METRICS:
		return metrics(h, conn);
	case R_CAPABILITIES:
		return capabilities(svc, conn, tenant_buf);
	case R_RUNS:
		if (is_get(method))
			return list_runs(svc, conn, tenant_buf);
		if (rc->too_large)
			return too_large(svc, conn, r);
		return post_run(svc, conn, tenant_buf, principal, rc);
	case R_RUN_INBOX:
		if (rc->too_large)
			return too_large(svc, conn, r);
		return run_route(svc, conn, r, tenant_buf, run_id, artifact_id,
				 rc);
	default:
		return run_route(svc, conn, r, tenant_buf, run_id, artifact_id,
				 rc);
	}
}

enum MHD_Result al_http_handle(void *cls, struct MHD_Connection *conn,
			       const char *url, const char *method,
			       const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	req_ctx *rc = *con_cls;
	(void)version;
	if (rc == NULL) {
		char run_id[40] = "", artifact_id[33] = "";
		(void)route_of(url, run_id, artifact_id);
		rc = request_start(conn, url, method, run_id);
		if (rc == NULL)
			return MHD_NO;
		*con_cls = rc;
	}
	/* Every line logged while answering names the request. */
	cur_req = rc;
	al_log_context(rc->request_id, rc->trace_id[0] ? rc->trace_id : NULL);
	enum MHD_Result ret = handle(cls, conn, url, method, upload_data,
				     upload_data_size, rc);
	al_log_context(NULL, NULL);
	cur_req = NULL;
	return ret;
}

static const char *termination_name(enum MHD_RequestTerminationCode toe)
{
	switch (toe) {
	case MHD_REQUEST_TERMINATED_COMPLETED_OK:
		return NULL;
	case MHD_REQUEST_TERMINATED_TIMEOUT_REACHED:
		return "timeout";
	case MHD_REQUEST_TERMINATED_CLIENT_ABORT:
		return "client_abort";
	case MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN:
		return "shutdown";
	default:
		return "error";
	}
}

/* The access line: what was asked and answered, never a token, a header
 * value other than the ids, or a body. */
static void access_line(const req_ctx *rc, enum MHD_RequestTerminationCode toe)
{
	if (!al_log_enabled(AL_LOG_INFO))
		return;
	al_log_field f[] = {
		AL_LF_S("method", rc->method),
		AL_LF_S("path", rc->path != NULL ? rc->path : "?"),
		AL_LF_N("status", rc->status),
		rc->streamed ? AL_LF_S("bytes", NULL)
			     : AL_LF_N("bytes", rc->bytes),
		AL_LF_N("duration_ms", al_mono_ms() - rc->t0_ms),
		AL_LF_S("tenant", rc->tenant[0] ? rc->tenant : NULL),
		AL_LF_S("run_id", rc->run_id[0] ? rc->run_id : NULL),
		AL_LF_S("traceparent",
			rc->traceparent[0] ? rc->traceparent : NULL),
		AL_LF_S("termination", termination_name(toe)),
	};
	al_log_context(rc->request_id, rc->trace_id[0] ? rc->trace_id : NULL);
	al_log_fields(AL_LOG_INFO, "request", f, sizeof(f) / sizeof(f[0]));
	al_log_context(NULL, NULL);
}

void al_http_completed(void *cls, struct MHD_Connection *conn,
		       void **con_cls, enum MHD_RequestTerminationCode toe)
{
	const al_http *h = cls;
	al_service *svc = h->svc;
	req_ctx *rc = *con_cls;
	/* A kept-alive connection's next request has the header deadline
	 * from now. */
	al_conns_phase(h->conns, conn, AL_CONN_HEADERS);
	if (rc != NULL) {
		access_line(rc, toe);
		bool admitted = rc->admitted;
		free(rc->body);
		free(rc->path);
		free(rc);
		*con_cls = NULL;
		/* Shutdown waits for answers to be sent before closing. */
		if (admitted) {
			pthread_mutex_lock(&svc->lock);
			svc->requests--;
			pthread_cond_broadcast(&svc->idle);
			pthread_mutex_unlock(&svc->lock);
		}
	}
}

size_t al_http_unescape(void *cls, struct MHD_Connection *conn, char *s)
{
	char *w = s;
	(void)cls;
	(void)conn;
	for (const char *p = s; *p != '\0';) {
		int hi = p[0] == '%' ? al_hex_digit(p[1]) : -1;
		int lo = hi >= 0 ? al_hex_digit(p[2]) : -1;
		if (lo >= 0 && (hi | lo) != 0) {
			*w++ = (char)(hi * 16 + lo);
			p += 3;
		} else {
			*w++ = *p++; /* "%00", a stray '%', any other byte */
		}
	}
	*w = '\0';
	return (size_t)(w - s);
}
