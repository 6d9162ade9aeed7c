/* The HTTP routes of airlockd (docs/api.md).  Every answer is typed JSON;
 * unknown paths answer 404 and known paths with a wrong method 405.  The
 * tenant comes from the bearer token only. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <airlock/json.h>

#include "core/util.h"
#include "proc/artifacts.h"
#include "server/http.h"

#define DEFAULT_LIST_LIMIT 50u
#define MAX_LIST_LIMIT 1000u

typedef struct req_ctx {
	char *body;
	size_t len, cap;
	bool too_large;
	bool oom;
} req_ctx;

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
	R_RUN_ARTIFACT
};

/* An inbox body: {"id", "event"} with the event's JSON at most 64 KiB. */
#define MAX_INBOX_BODY (AL_MAX_INBOX_EVENT_BYTES + 1024u)

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
		return "GET, POST";
	case R_RUN_INTERRUPT:
	case R_RUN_INBOX:
		return "POST";
	default:
		return "GET";
	}
}

static bool method_allowed(enum route r, const char *method)
{
	bool post_only = r == R_RUN_INTERRUPT || r == R_RUN_INBOX;
	if (strcmp(method, "GET") == 0)
		return !post_only;
	if (strcmp(method, "POST") == 0)
		return r == R_RUNS || post_only;
	return false;
}

/* The body bound of a route. */
static size_t body_limit(const al_service *svc, enum route r)
{
	return r == R_RUN_INBOX ? MAX_INBOX_BODY : svc->opts.max_body_bytes;
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

static enum MHD_Result answer_result(al_service *svc,
				     struct MHD_Connection *conn,
				     al_srv_run *run, bool as_stored)
{
	char *text = NULL;
	unsigned status = 200;
	const char *retry = NULL;
	pthread_mutex_lock(&svc->lock);
	if (run->state == AL_SRV_RUN_DONE) {
		text = strdup(run->result_json);
		status = as_stored ? 200 : run->status;
		retry = status == 429 ? "1" : NULL;
	} else {
		json_t *o = json_pack("{s:s, s:s}", "run_id", run->run_id,
				      "state", "running");
		text = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
	}
	pthread_mutex_unlock(&svc->lock);
	return queue_text(svc, conn, status, text, "application/json",
			  retry ? "Retry-After" : NULL, retry);
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
	};
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
	bool done = run->state == AL_SRV_RUN_DONE, named = run->run_id[0];
	char run_id[40];
	memcpy(run_id, run->run_id, sizeof(run_id));
	pthread_mutex_unlock(&svc->lock);

	if (wait == 0 && named) {
		json_t *o = json_pack("{s:s, s:s}", "run_id", run_id, "state",
				      done ? "finished" : "running");
		char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		ret = al_http_json(svc, conn, 202, text);
	} else if (done) {
		ret = answer_result(svc, conn, run, false);
	} else {
		ret = al_http_error(svc, conn, 503, "shutting_down",
				    "the service closed before the run "
				    "ended");
	}
	al_service_run_put(svc, run);
	return ret;
}

static enum MHD_Result list_runs(al_service *svc, struct MHD_Connection *conn,
				 const char *tenant)
{
	const char *lim = MHD_lookup_connection_value(
		conn, MHD_GET_ARGUMENT_KIND, "limit");
	const char *after = MHD_lookup_connection_value(
		conn, MHD_GET_ARGUMENT_KIND, "after");
	size_t limit = DEFAULT_LIST_LIMIT;
	char *text = NULL;

	if (lim != NULL) {
		char *end;
		errno = 0;
		unsigned long v = strtoul(lim, &end, 10);
		if (errno || end == lim || *end || lim[0] == '-' || v == 0 ||
		    v > MAX_LIST_LIMIT)
			return al_http_error(svc, conn, 400, "invalid_query",
					     "limit: expected an integer "
					     "from 1 to 1000");
		limit = v;
	}
	if (after != NULL && !valid_run_id(after, strlen(after)))
		return al_http_error(svc, conn, 400, "invalid_query",
				     "after: not a run id");
	int rc = al_service_list(svc, tenant, limit, after, &text);
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

static enum MHD_Result health(al_service *svc, struct MHD_Connection *conn)
{
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
	json_t *o = json_pack("{s:s, s:b, s:b, s:{s:b, s:b, s:b}}", "status",
			      ready ? "ok" : "unavailable", "live", 1, "ready",
			      ready, "checks", "storage_writable", storage,
			      "provider_available", provider, "accepting_runs",
			      !draining);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return al_http_json(svc, conn, ready ? 200 : 503, text);
}

static enum MHD_Result metrics(al_service *svc, struct MHD_Connection *conn)
{
	pthread_mutex_lock(&svc->lock);
	unsigned active = svc->active;
	pthread_mutex_unlock(&svc->lock);
	al_srv_gen *gen = al_service_gen_get(svc);
	char *host_text = gen ? al_host_metrics_text(gen->host) : NULL;
	al_service_gen_put(svc, gen);
	al_idle_stats idle;
	if (svc->idle_sups != NULL)
		al_idle_pool_stats(svc->idle_sups, &idle);
	char *text = al_srv_metrics_text(svc->metrics, active,
					 svc->idle_sups != NULL ? &idle : NULL,
					 host_text);
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
				 al_srv_run *run, const char *run_id)
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
	return answer_result(svc, conn, run, true);
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

static enum MHD_Result inbox(al_service *svc, struct MHD_Connection *conn,
			     al_srv_run *run, const char *run_id,
			     const req_ctx *rc)
{
	char *id = NULL, *event = NULL;
	enum MHD_Result ret;
	if (rc->oom)
		return al_http_error(svc, conn, 503, "unavailable",
				     "out of memory reading the body");
	const char *why = parse_event(rc, &id, &event);
	if (why != NULL)
		return why[0] ? al_http_error(svc, conn, 400, "invalid_event",
					      why)
			      : al_http_error(svc, conn, 503, "unavailable",
					      "out of memory");
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

/* One artifact of a run of this tenant (docs/workspaces.md), its bytes
 * as they are in the store: opened beneath the store without following a
 * link, and sent from that descriptor. */
static enum MHD_Result artifact(al_service *svc, struct MHD_Connection *conn,
				const char *run_id, const char *id)
{
	int fd = al_artifact_open(svc->opts.state_dir, run_id, id);
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
	add_common_headers(resp, "application/octet-stream");
	MHD_add_response_header(resp, "Content-Disposition", "attachment");
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
	/* Another tenant's run answers exactly like an unknown one. */
	if (run == NULL)
		return al_http_error(svc, conn, 404, "not_found",
				     "no such run");
	if (r == R_RUN_EVENTS)
		return al_http_events(svc, conn, run);
	if (r == R_RUN_ARTIFACT)
		ret = artifact(svc, conn, run_id, artifact_id);
	else if (r == R_RUN)
		ret = answer_result(svc, conn, run, true);
	else if (r == R_RUN_INBOX)
		ret = inbox(svc, conn, run, run_id, rc);
	else
		ret = interrupt(svc, conn, run, run_id);
	al_service_run_put(svc, run);
	return ret;
}

/* Appends an upload chunk, keeping at most max bytes. */
static void take_chunk(req_ctx *rc, const char *data, size_t len, size_t max)
{
	if (rc->too_large || rc->oom)
		return;
	if (len > max - rc->len) {
		rc->too_large = true;
		free(rc->body);
		rc->body = NULL;
		rc->len = rc->cap = 0;
		return;
	}
	if (rc->len + len + 1 > rc->cap) {
		size_t cap = rc->cap ? rc->cap : 4096;
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

enum MHD_Result al_http_handle(void *cls, struct MHD_Connection *conn,
			       const char *url, const char *method,
			       const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls)
{
	al_service *svc = cls;
	req_ctx *rc = *con_cls;
	char run_id[40] = "", principal[AL_AUTH_PRINCIPAL_LEN] = "";
	char artifact_id[33] = "";
	enum route r = route_of(url, run_id, artifact_id);
	(void)version;

	if (rc == NULL) {
		/* First call: headers only.  Refuse early what needs no
		 * body, so a refused upload is never read. */
		if (r == R_NONE)
			return al_http_error(svc, conn, 404, "not_found",
					     "no such endpoint");
		if (!method_allowed(r, method))
			return error_with_header(
				svc, conn, 405, "method_not_allowed",
				"method not allowed on this endpoint",
				MHD_HTTP_HEADER_ALLOW, allowed_methods(r));
		if (r != R_HEALTH) {
			al_srv_gen *gen = al_service_gen_get(svc);
			const char *t = gen ? al_auth_tenant(
						      gen->auth,
						      MHD_lookup_connection_value(
							      conn,
							      MHD_HEADER_KIND,
							      MHD_HTTP_HEADER_AUTHORIZATION),
						      NULL)
					    : NULL;
			al_service_gen_put(svc, gen);
			if (t == NULL)
				return error_with_header(
					svc, conn, 401, "unauthorized",
					"a valid bearer token is required",
					MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer");
		}
		if ((r == R_RUNS || r == R_RUN_INBOX) &&
		    strcmp(method, "POST") == 0) {
			const char *cl = MHD_lookup_connection_value(
				conn, MHD_HEADER_KIND,
				MHD_HTTP_HEADER_CONTENT_LENGTH);
			if (cl != NULL &&
			    strtoull(cl, NULL, 10) > body_limit(svc, r))
				return too_large(svc, conn, r);
		}
		if ((rc = calloc(1, sizeof(*rc))) == NULL)
			return MHD_NO;
		*con_cls = rc;
		pthread_mutex_lock(&svc->lock);
		svc->requests++;
		pthread_mutex_unlock(&svc->lock);
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		take_chunk(rc, upload_data, *upload_data_size,
			   body_limit(svc, r));
		*upload_data_size = 0;
		return MHD_YES;
	}

	/* The whole request is in.  The token is checked again: a reload
	 * between the calls may have revoked it. */
	const char *tenant = NULL;
	al_srv_gen *gen = al_service_gen_get(svc);
	char tenant_buf[256] = "";
	if (gen != NULL) {
		tenant = al_auth_tenant(
			gen->auth,
			MHD_lookup_connection_value(
				conn, MHD_HEADER_KIND,
				MHD_HTTP_HEADER_AUTHORIZATION),
			principal);
		if (tenant != NULL)
			snprintf(tenant_buf, sizeof(tenant_buf), "%s", tenant);
	}
	al_service_gen_put(svc, gen);
	if (r != R_HEALTH && tenant == NULL)
		return error_with_header(svc, conn, 401, "unauthorized",
					 "a valid bearer token is required",
					 MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					 "Bearer");
	switch (r) {
	case R_HEALTH:
		return health(svc, conn);
	case R_METRICS:
		return metrics(svc, conn);
	case R_CAPABILITIES:
		return capabilities(svc, conn, tenant_buf);
	case R_RUNS:
		if (strcmp(method, "GET") == 0)
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

void al_http_completed(void *cls, struct MHD_Connection *conn,
		       void **con_cls, enum MHD_RequestTerminationCode toe)
{
	al_service *svc = cls;
	req_ctx *rc = *con_cls;
	(void)conn;
	(void)toe;
	if (rc != NULL) {
		free(rc->body);
		free(rc);
		*con_cls = NULL;
		/* Shutdown waits for answers to be sent before closing. */
		pthread_mutex_lock(&svc->lock);
		svc->requests--;
		pthread_cond_broadcast(&svc->idle);
		pthread_mutex_unlock(&svc->lock);
	}
}
