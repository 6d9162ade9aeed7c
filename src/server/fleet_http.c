/* The HTTP routes of a fleet node (docs/scale-out.md): a submission is
 * queued in the store (and waited for there when the caller waits); a run
 * this node's table does not hold is read, streamed, interrupted and sent
 * inbox events through the store, whichever node runs it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <airlock/contract.h>
#include <airlock/json.h>

#include "core/util.h"
#include "host/config.h"
#include "host/forwarded_env.h"
#include "host/secrets.h"
#include "server/fleet_internal.h"
#include "server/http.h"
#include "server/run_filter.h"
#include "server/service.h"

#define KEEPALIVE_WAITS 15 /* one-second waits between keepalives */

static bool svc_closing(al_service *svc)
{
	pthread_mutex_lock(&svc->lock);
	bool c = svc->closing;
	pthread_mutex_unlock(&svc->lock);
	return c;
}

static enum MHD_Result state_answer(al_service *svc,
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

static enum MHD_Result unreachable(al_service *svc,
				   struct MHD_Connection *conn)
{
	return al_http_error(svc, conn, 503, "store_unavailable",
			     "the fleet's store cannot be reached");
}

/* Waits until the run is finished and answers its result (with the
 * outcome's status, or 200 for a read). */
static enum MHD_Result wait_result(al_service *svc,
				   struct MHD_Connection *conn,
				   const char *tenant, const char *run_id,
				   bool as_stored)
{
	al_fleet *f = svc->fleet;
	uint64_t seen = 0;
	for (;;) {
		al_store_run r;
		int rc = f->st->ops->get(f->st, tenant, run_id, &r);
		if (rc == 0 && strcmp(r.state, "finished") == 0 &&
		    r.result != NULL) {
			char *text = r.result;
			unsigned st = as_stored ? 200 : r.status;
			r.result = NULL;
			al_store_run_clear(&r);
			return al_http_json(svc, conn, st ? st : 200, text);
		}
		al_store_run_clear(&r);
		if (rc == -ENOENT)
			return al_http_error(svc, conn, 404, "not_found",
					     "no such run");
		if (svc_closing(svc))
			return al_http_error(svc, conn, 503, "shutting_down",
					     "the service closed before the "
					     "run ended");
		/* A store that is away (restarting) is waited for too: the
		 * run was accepted. */
		f->st->ops->wait(f->st, false, &seen, 1000);
	}
}

static unsigned tenant_max(const al_config *cfg, const char *tenant)
{
	for (size_t i = 0; i < cfg->n_tenants; i++)
		if (strcmp(cfg->tenants[i].name, tenant) == 0)
			return cfg->tenants[i].concurrency;
	return 0;
}

/* A refusal decided here, before anything is queued, answered as the
 * single node's admission answers it: a result under a new run id. */
static enum MHD_Result refusal(al_service *svc, struct MHD_Connection *conn,
			       al_outcome outcome, const char *reason)
{
	al_result *res = al_result_new();
	char *text = NULL;
	if (res != NULL) {
		al_run_id_new(res->run_id);
		res->finished_at_ms = al_now_ms();
		if (al_result_set_outcome(res, outcome, reason) == 0)
			text = al_result_to_json(res, 0);
	}
	al_result_free(res);
	if (text == NULL)
		return al_http_error(svc, conn, 503, "unavailable",
				     "out of memory");
	return al_http_json(svc, conn, al_srv_status_for(outcome, reason),
			    text);
}

/* The remote provider's headers (docs/api.md), checked as the single
 * node's admission checks them: NULL when they pass, else the refusal's
 * outcome and reason. */
static const char *check_headers(al_service *svc, const char *tenant,
				 const char *run_id, const char *fwd_env,
				 al_outcome *outcome)
{
	*outcome = AL_OUTCOME_INVALID_REQUEST;
	if (run_id != NULL && !al_run_id_canonical(run_id))
		return "run_id";
	if (fwd_env == NULL)
		return NULL;
	al_srv_gen *gen = al_service_gen_get(svc);
	const al_cfg_tenant *t =
		gen != NULL ? al_config_tenant(gen->cfg, tenant) : NULL;
	bool accepts = t != NULL && t->accept_forwarded_env;
	al_service_gen_put(svc, gen);
	if (!accepts) {
		*outcome = AL_OUTCOME_DENIED;
		return "gate:forwarded_env";
	}
	char **env = NULL;
	size_t n = 0;
	const char *why = NULL;
	int rc = al_forwarded_env_parse(fwd_env, &env, &n, &why);
	al_secrets_env_free(env, n);
	if (rc == -ENOMEM) {
		*outcome = AL_OUTCOME_UNAVAILABLE;
		return "out_of_memory";
	}
	return rc < 0 ? why : NULL;
}

enum MHD_Result al_fleet_post(al_service *svc, struct MHD_Connection *conn,
			      const char *tenant, const char *principal,
			      const char *body, size_t len, bool wait,
			      const char *asked_run_id, const char *fwd_env)
{
	al_fleet *f = svc->fleet;
	pthread_mutex_lock(&svc->lock);
	bool draining = svc->draining;
	pthread_mutex_unlock(&svc->lock);
	if (draining)
		return al_http_error(svc, conn, 503, "shutting_down",
				     "the service is shutting down");
	al_outcome refused;
	const char *why = check_headers(svc, tenant, asked_run_id, fwd_env,
					&refused);
	if (why != NULL)
		return refusal(svc, conn, refused, why);
	/* The store keeps the request as text; the executing node's
	 * admission validates it (its refusal is the run's result). */
	if (memchr(body, '\0', len) != NULL)
		return al_http_error(svc, conn, 400, "invalid_request",
				     "body: not valid JSON");
	char id[40], sha[65], existing[40], nonce[40];
	/* X-Airlock-Run-Id: the run is queued, and known fleet-wide, under
	 * the caller's id (the executing node's admission checks it is
	 * free there too). */
	if (asked_run_id != NULL)
		snprintf(id, sizeof(id), "%s", asked_run_id);
	else
		al_run_id_new(id);
	al_run_id_new(nonce);
	al_sha256_hex(body, len, sha);
	json_t *req = json_loadb(body, len, 0, NULL);
	const char *key =
		json_string_value(json_object_get(req, "idempotency_key"));
	al_srv_gen *gen = al_service_gen_get(svc);
	unsigned tmax = gen != NULL ? tenant_max(gen->cfg, tenant) : 0;
	al_service_gen_put(svc, gen);
	char *text = strndup(body, len);
	/* The caller's trace goes with the run to the node that executes
	 * it (an invalid header is ignored, as everywhere). */
	const char *tp = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						     "traceparent");
	al_store_submit s = {.run_id = id,
			     .tenant = tenant,
			     .principal = principal ? principal : "",
			     .body = text,
			     .request_sha256 = sha,
			     .idem_key = key,
			     .tenant_max = tmax,
			     .language = json_string_value(
				     json_object_get(req, "language")),
			     .lease_ms = f->lease_ms,
			     .pinned = fwd_env != NULL ? f->node : NULL,
			     .nonce = nonce,
			     .traceparent = al_http_traceparent_valid(tp)
						    ? tp
						    : NULL};
	/* X-Airlock-Forwarded-Env: secrets never reach the store; the run
	 * is pinned to this node, which keeps them in memory until it
	 * claims the run (docs/scale-out.md). */
	int rc = text == NULL ? -ENOMEM
		 : fwd_env != NULL ? al_fleet_pin_add(f, id, fwd_env)
				   : 0;
	bool pinned = fwd_env != NULL && rc == 0;
	if (rc == 0)
		rc = f->st->ops->enqueue(f->st, &s, existing);
	/* Only this submission's own pin is taken back. */
	if (pinned && rc != 0)
		al_explicit_free_str(al_fleet_pin_take(f, id));
	free(text);
	json_decref(req);
	if (rc == -EADDRINUSE)
		return refusal(svc, conn, AL_OUTCOME_CONFLICT, "run_id_in_use");
	if (rc == -EEXIST)
		return al_http_error(svc, conn, 409, "idempotency_conflict",
				     "the idempotency key belongs to a "
				     "different request");
	if (rc == -EAGAIN)
		return unreachable(svc, conn);
	if (rc < 0)
		return al_http_error(svc, conn, 503, "unavailable",
				     "cannot queue the run");
	const char *run_id = rc == 1 ? existing : id;
	if (!wait)
		return state_answer(svc, conn, 202, run_id, "queued", NULL);
	return wait_result(svc, conn, tenant, run_id, false);
}

/* ---- events ----------------------------------------------------------- */

typedef struct fsse {
	al_service *svc;
	char tenant[256];
	char run_id[40];
	uint64_t next, seen;
	char *pend;
	size_t pend_len, pend_off;
	bool finished;
	unsigned idle;
} fsse;

static int add_event(void *ctx, uint64_t seq, int stream,
		     const unsigned char *data, size_t len)
{
	fsse *s = ctx;
	char *one = al_sse_format_output(seq, stream, data, len);
	if (one == NULL)
		return -ENOMEM;
	size_t ol = strlen(one);
	char *more = realloc(s->pend, s->pend_len + ol + 1);
	if (more == NULL) {
		free(one);
		return -ENOMEM;
	}
	memcpy(more + s->pend_len, one, ol + 1);
	s->pend = more;
	s->pend_len += ol;
	s->next = seq + 1;
	free(one);
	return 0;
}

/* Fills s->pend: events past s->next, else the result once the run is
 * finished, else a keepalive after a while.  false: end the stream. */
static bool fill(fsse *s)
{
	al_fleet *f = s->svc->fleet;
	for (;;) {
		if (f->st->ops->events_read(f->st, s->run_id, s->next,
					    add_event, s) < 0 &&
		    s->pend == NULL && svc_closing(s->svc))
			return false;
		if (s->pend != NULL)
			return true;
		al_store_run r;
		int rc = f->st->ops->get(f->st, s->tenant, s->run_id, &r);
		if (rc == -ENOENT) {
			al_store_run_clear(&r);
			return false;
		}
		if (rc == 0 && strcmp(r.state, "finished") == 0) {
			/* Events are written before the result: read once
			 * more so none is missed. */
			(void)f->st->ops->events_read(f->st, s->run_id,
						      s->next, add_event, s);
			if (s->pend == NULL) {
				s->pend = al_strdup_printf(
					"event: result\nid: %llu\ndata: %s\n\n",
					(unsigned long long)s->next,
					r.result ? r.result : "{}");
				s->pend_len = s->pend ? strlen(s->pend) : 0;
				s->finished = true;
			}
			al_store_run_clear(&r);
			return s->pend != NULL;
		}
		al_store_run_clear(&r);
		if (svc_closing(s->svc))
			return false;
		if (++s->idle >= KEEPALIVE_WAITS) {
			s->idle = 0;
			s->pend = strdup(": keepalive\n\n");
			s->pend_len = s->pend ? strlen(s->pend) : 0;
			return s->pend != NULL;
		}
		f->st->ops->wait(f->st, false, &s->seen, 1000);
	}
}

static ssize_t fsse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	fsse *s = cls;
	(void)pos;
	if (s->pend_off >= s->pend_len) {
		free(s->pend);
		s->pend = NULL;
		s->pend_len = s->pend_off = 0;
		if (s->finished)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (!fill(s))
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	size_t n = s->pend_len - s->pend_off;
	if (n > max)
		n = max;
	memcpy(buf, s->pend + s->pend_off, n);
	s->pend_off += n;
	return (ssize_t)n;
}

static void fsse_free(void *cls)
{
	fsse *s = cls;
	free(s->pend);
	free(s);
}

static int count_event(void *ctx, uint64_t seq, int stream,
		       const unsigned char *data, size_t len)
{
	(void)seq;
	(void)stream;
	(void)data;
	(void)len;
	(*(unsigned *)ctx)++;
	return 1; /* one is enough */
}

static enum MHD_Result events(al_service *svc, struct MHD_Connection *conn,
			      const char *tenant, const char *run_id)
{
	al_fleet *f = svc->fleet;
	al_store_run r;
	int rc = f->st->ops->get(f->st, tenant, run_id, &r);
	bool finished = rc == 0 && strcmp(r.state, "finished") == 0;
	al_store_run_clear(&r);
	if (rc == -ENOENT)
		return al_http_error(svc, conn, 404, "not_found",
				     "no such run");
	if (rc < 0)
		return unreachable(svc, conn);
	fsse *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return MHD_NO;
	s->svc = svc;
	snprintf(s->tenant, sizeof(s->tenant), "%s", tenant);
	snprintf(s->run_id, sizeof(s->run_id), "%s", run_id);
	const char *last = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						       "Last-Event-ID");
	if (last != NULL && last[0] != '\0') {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(last, &end, 10);
		if (errno != 0 || last[0] < '0' || last[0] > '9' ||
		    *end != '\0' || v == UINT64_MAX) {
			free(s);
			return al_http_error(svc, conn, 400, "invalid_header",
					     "Last-Event-ID: expected an event "
					     "id of this stream");
		}
		s->next = v + 1;
		/* The result's id is one past the last output event: a
		 * client that saw it gets nothing more. */
		unsigned at = 0;
		if (finished &&
		    f->st->ops->events_read(f->st, run_id, v, count_event,
					    &at) == 0 &&
		    at == 0) {
			free(s);
			struct MHD_Response *resp =
				MHD_create_response_from_buffer(
					0, NULL, MHD_RESPMEM_PERSISTENT);
			if (resp == NULL)
				return MHD_NO;
			al_http_answer(resp, 204, 0, false);
			enum MHD_Result ret =
				MHD_queue_response(conn, 204, resp);
			MHD_destroy_response(resp);
			return ret;
		}
	}
	struct MHD_Response *resp = MHD_create_response_from_callback(
		MHD_SIZE_UNKNOWN, 16 * 1024, fsse_read, s, fsse_free);
	if (resp == NULL) {
		free(s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-store");
	al_http_answer(resp, 200, 0, true);
	enum MHD_Result ret = MHD_queue_response(conn, 200, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* ---- reads and controls ------------------------------------------------ */

enum MHD_Result al_fleet_run(al_service *svc, struct MHD_Connection *conn,
			     char kind, const char *tenant,
			     const char *run_id)
{
	al_fleet *f = svc->fleet;
	if (kind == 'e')
		return events(svc, conn, tenant, run_id);
	if (kind == 'i') {
		const char *w = MHD_lookup_connection_value(
			conn, MHD_GET_ARGUMENT_KIND, "wait");
		int wait = w == NULL ? 0
			   : strcmp(w, "true") == 0 || strcmp(w, "1") == 0
				   ? 1
			   : strcmp(w, "false") == 0 || strcmp(w, "0") == 0
				   ? 0
				   : -1;
		if (wait < 0)
			return al_http_error(svc, conn, 400, "invalid_query",
					     "wait: expected true or false");
		int rc = f->st->ops->control_add(f->st, tenant, run_id,
						 wait ? "stop" : "interrupt",
						 NULL, NULL);
		if (rc == -ENOENT)
			return al_http_error(svc, conn, 404, "not_found",
					     "no such run");
		if (rc == -EALREADY)
			return al_http_error(svc, conn, 409, "run_finished",
					     "the run has already finished");
		if (rc < 0)
			return unreachable(svc, conn);
		if (!wait)
			return state_answer(svc, conn, 202, run_id,
					    "interrupting", NULL);
		return wait_result(svc, conn, tenant, run_id, true);
	}
	al_store_run r;
	int rc = f->st->ops->get(f->st, tenant, run_id, &r);
	if (rc == -ENOENT)
		return al_http_error(svc, conn, 404, "not_found",
				     "no such run");
	if (rc < 0)
		return unreachable(svc, conn);
	enum MHD_Result ret;
	if (strcmp(r.state, "finished") == 0 && r.result != NULL) {
		char *text = r.result;
		r.result = NULL;
		ret = al_http_json(svc, conn, 200, text);
	} else {
		ret = state_answer(svc, conn, 200, run_id, r.state, NULL);
	}
	al_store_run_clear(&r);
	return ret;
}

enum MHD_Result al_fleet_inbox(al_service *svc, struct MHD_Connection *conn,
			       const char *tenant, const char *run_id,
			       const char *id, const char *event)
{
	al_fleet *f = svc->fleet;
	int rc = f->st->ops->control_add(f->st, tenant, run_id, "inbox", id,
					 event);
	switch (rc) {
	case 0:
		/* The node running it delivers it (while the run lives). */
		return state_answer(svc, conn, 202, run_id, "queued", id);
	case 1:
		return state_answer(svc, conn, 200, run_id, "duplicate", id);
	case -ENOENT:
		return al_http_error(svc, conn, 404, "not_found",
				     "no such run");
	case -EALREADY:
		return al_http_error(svc, conn, 409, "run_finished",
				     "the run's result is already recorded");
	default:
		return unreachable(svc, conn);
	}
}

/* ---- the list ------------------------------------------------------- */

typedef struct list_ctx {
	json_t *arr;
	char last[40];
	unsigned n, limit;
	bool more;
} list_ctx;

static int list_one(void *ctx, const char *run_id, const char *state,
		    int64_t created_ms, const char *outcome,
		    const char *language)
{
	list_ctx *l = ctx;
	char ts[40];
	if (l->n == l->limit) {
		l->more = true;
		return 1;
	}
	al_format_time_ms(created_ms, ts, sizeof(ts));
	json_t *item = json_pack("{s:s, s:s, s:s}", "run_id", run_id, "state",
				 state, "created_at", ts);
	if (item != NULL && outcome != NULL)
		json_object_set_new(item, "outcome", json_string(outcome));
	if (item != NULL && language != NULL)
		json_object_set_new(item, "language", json_string(language));
	if (item == NULL || json_array_append_new(l->arr, item) < 0)
		return -ENOMEM;
	snprintf(l->last, sizeof(l->last), "%s", run_id);
	l->n++;
	return 0;
}

enum MHD_Result al_fleet_list(al_service *svc, struct MHD_Connection *conn,
			      const char *tenant, size_t limit,
			      const char *after,
			      const struct al_run_filter *filter)
{
	al_fleet *f = svc->fleet;
	list_ctx l = {.arr = json_array(), .limit = (unsigned)limit};
	/* One more than asked: whether a next page exists. */
	al_store_list_query q = {
		.tenant = tenant,
		.limit = (unsigned)limit + 1,
		.after = after,
		.outcome = filter->by_outcome ? al_outcome_name(filter->outcome)
					      : NULL,
		.language = filter->language[0] ? filter->language : NULL,
		.since_ms = filter->since_ms,
		.until_ms = filter->until_ms,
	};
	int rc = l.arr != NULL ? f->st->ops->list(f->st, &q, list_one, &l)
			       : -ENOMEM;
	json_t *doc = NULL;
	if (rc == 0 &&
	    (doc = json_pack("{s:O, s:o}", "runs", l.arr, "next_after",
			     l.more ? json_string(l.last) : json_null())) ==
		    NULL)
		rc = -ENOMEM;
	json_decref(l.arr);
	char *text = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (rc == -ENOENT)
		return al_http_error(svc, conn, 400, "invalid_query",
				     "after: no such run");
	if (rc == -EAGAIN)
		return unreachable(svc, conn);
	if (rc < 0 || text == NULL) {
		free(text);
		return al_http_error(svc, conn, 503, "unavailable",
				     "out of memory");
	}
	return al_http_json(svc, conn, 200, text);
}

const char *al_fleet_artifacts_root(al_service *svc, const char *tenant,
				    const char *run_id)
{
	al_fleet *f = svc->fleet;
	if (f->artifacts_root == NULL)
		return NULL;
	al_store_run r;
	int rc = f->st->ops->get(f->st, tenant, run_id, &r);
	al_store_run_clear(&r);
	return rc == 0 ? f->artifacts_root : NULL;
}
