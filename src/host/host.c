/* The host pipeline (docs/host.md).
 *
 * Steps in fixed order: validate, enabled, tenant language allow-list,
 * grant, ceilings, provider selection, idempotency, audit run.started,
 * slot, execute (on a worker thread, waited for at most wall + grace),
 * after (caps, shape check, audit run.finished, idempotent store,
 * metrics).  A refusal at any step returns before the next one: nothing
 * reaches a provider unless every step before it passed. */
#include "host/host_internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <airlock/json.h>

#include "bundle/bundle.h"
#include "core/log.h"
#include "host/admission.h"
#include "host/audit.h"
#include "host/build_cache_dir.h"
#include "host/forwarded_env.h"
#include "host/gates.h"
#include "host/judge.h"
#include "host/plan.h"
#include "host/run_env.h"
#include "host/secrets.h"
#include "host/host_toolbelt.h"
#include "host/operations.h"
#include "json/toolbelt_json.h"

#include "core/util.h"
#include "lang/languages.h"

static const char truncation_notice[] = "\n[airlock: output truncated]\n";

/* ---- lifetime ------------------------------------------------------- */

int al_host_new(const al_config *cfg, const al_host_options *opts,
		al_host **out, al_error **err)
{
	al_host *h = NULL;
	int rc;

	*out = NULL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->workers_cond, NULL);
	if ((rc = al_config_copy(cfg, &h->cfg, err)) < 0)
		goto fail;
	const char *sd = opts && opts->state_dir ? opts->state_dir
						 : h->cfg->state_dir;
	if (!sd) {
		rc = al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL,
				  "state_dir", "no state directory given");
		goto fail;
	}
	if (!(h->state_dir = strdup(sd))) {
		rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				  "out of memory");
		goto fail;
	}
	if ((rc = al_secrets_check(h->cfg->secrets_kind, h->cfg->secrets_path,
				   err)) < 0)
		goto fail;
	if ((rc = al_selector_init(&h->sel, h->cfg,
				   opts ? opts->providers : NULL,
				   opts ? opts->force_provider : NULL,
				   opts && opts->force_acknowledges_trusted,
				   err)) < 0) {
		h->sel_ready = true;
		goto fail;
	}
	h->sel_ready = true;
	if ((rc = al_db_open(h->state_dir, h->cfg->audit_busy_timeout_ms,
			     &h->db, err)) < 0)
		goto fail;
	h->idem = al_idem_new(h->db, h->cfg->idempotency_retention_s);
	h->slots = al_slots_new(h->cfg->concurrency);
	h->metrics = al_metrics_new();
	if (!h->idem || !h->slots || !h->metrics) {
		rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				  "out of memory");
		goto fail;
	}
	*out = h;
	return 0;
fail:
	al_host_free(h);
	return al_error_wrap(err, rc, NULL);
}

void al_host_free(al_host *h)
{
	if (!h)
		return;
	/* Abandoned workers (a provider that ignored the host's deadline)
	 * still hold a provider handle: wait for them to return before the
	 * handles are released. */
	pthread_mutex_lock(&h->lock);
	while (h->workers > 0)
		pthread_cond_wait(&h->workers_cond, &h->lock);
	pthread_mutex_unlock(&h->lock);
	if (h->sel_ready)
		al_selector_destroy(&h->sel);
	al_idem_free(h->idem);
	al_slots_free(h->slots);
	al_metrics_free(h->metrics);
	al_db_close(h->db);
	al_config_free(h->cfg);
	free(h->state_dir);
	pthread_cond_destroy(&h->workers_cond);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* ---- helpers -------------------------------------------------------- */

static json_t *jstr_or_null(const char *s)
{
	json_t *j = s ? json_string(s) : NULL;
	return j ? j : json_null();
}

static json_t *grant_json(const al_grant *g)
{
	json_t *sec = json_array();
	for (size_t i = 0; sec && i < g->n_secrets; i++)
		json_array_append_new(sec, json_string(g->secrets[i]));
	json_t *o = json_pack("{s:s, s:s, s:o, s:b}", "network",
			      al_network_name(g->network), "workspace",
			      al_workspace_mode_name(g->workspace), "secrets",
			      sec ? sec : json_array(), "streaming",
			      g->streaming);
	if (o != NULL)
		(void)al_toolbelt_grant_emit(o, g);
	return o;
}

static json_t *limits_json(const al_limits *l)
{
	json_t *o = json_object();
	al_limits copy = *l;
	for (unsigned bit = 1; o && (bit & AL_LIMIT__ALL); bit <<= 1)
		json_object_set_new(
			o, al_limit_name(bit),
			json_integer((json_int_t)*al_limits_field(&copy, bit)));
	return o;
}

/* What a run accumulates for its audit records.  An admission (the
 * daemon's split pipeline, host/admission.h) is a run_state that outlives
 * the call: it then owns copies of the caller's context. */
typedef struct run_state {
	al_host *h;
	const al_host_context *ctx;
	const al_run_options *opts;
	al_request *req; /* validated copy; NULL when invalid */
	const al_cfg_tenant *tenant; /* NULL for a resumed run whose tenant
					left the configuration */
	const char *tenant_name;     /* slots and idempotency scope */
	char code_sha256[65];
	char plan_sha256[65]; /* host/plan.h: what content pins name */
	char traceparent[56]; /* the caller's W3C traceparent, "" when none */
	char *canonical; /* canonical request JSON */
	char canonical_sha256[65];
	al_selection sel;
	bool selected;
	const char *provider_id;
	int64_t t0;
	al_result *res;
	/* From admission to the end of the execution: */
	char **host_env; /* resolved secrets, wiped on free */
	size_t n_host_env;
	char **fwd_env; /* forwarded by the caller (airlockd), until merged
			   into host_env; wiped on free */
	size_t n_fwd_env;
	bool claimed;	 /* the idempotency key is held */
	bool called;	 /* a provider was (or may have been) called */
	bool slot_held;
	unsigned extra_slots; /* judged cases: slots held besides the run's */
	/* al_finish_options' retry of run.finished (NULL: none). */
	int (*audit_retry)(void *ctx, unsigned attempt);
	void *audit_retry_ctx;
	/* al_finish_options' result_durable: the run's result is already on
	 * disk, synced, where recovery finds it. */
	bool result_durable;
	/* Owned by an admission: */
	al_host_context own_ctx;
	char *own_tenant, *own_principal, *own_provider;
	al_facts *own_facts;
} run_state;

struct al_admission {
	run_state rs;
};

static json_t *audit_record(const run_state *rs, const char *event)
{
	const al_request *req = rs->req;
	json_t *r = json_object();
	if (!r)
		return NULL;
	json_object_set_new(r, "event", json_string(event));
	json_object_set_new(r, "tenant",
			    jstr_or_null(rs->ctx ? rs->ctx->tenant : NULL));
	json_object_set_new(r, "principal",
			    jstr_or_null(rs->ctx ? rs->ctx->principal : NULL));
	json_object_set_new(r, "run_id", json_string(rs->res->run_id));
	json_object_set_new(r, "language",
			    jstr_or_null(req ? req->language : NULL));
	json_object_set_new(r, "code_sha256",
			    jstr_or_null(req ? rs->code_sha256 : NULL));
	json_object_set_new(r, "plan_sha256",
			    jstr_or_null(req ? rs->plan_sha256 : NULL));
	json_object_set_new(r, "purpose",
			    jstr_or_null(req ? al_purpose_name(req->purpose)
					     : NULL));
	json_object_set_new(r, "isolation",
			    jstr_or_null(req ? al_isolation_name(req->isolation)
					     : NULL));
	json_object_set_new(r, "grant", req ? grant_json(&req->grant)
					    : json_null());
	json_object_set_new(r, "limits", req ? limits_json(&req->limits)
					     : json_null());
	json_object_set_new(r, "provider", jstr_or_null(rs->provider_id));
	if (req != NULL && req->name != NULL)
		json_object_set_new(r, "script_name", json_string(req->name));
	if (rs->selected || rs->sel.n_skips)
		json_object_set_new(r, "selection",
				    al_selection_json(&rs->sel));
	if (strcmp(event, "run.started") == 0 && rs->traceparent[0]) {
		json_object_set_new(r, "traceparent",
				    json_string(rs->traceparent));
		json_object_set_new(r, "trace_id",
				    json_stringn(rs->traceparent + 3, 32));
	}
	if (strcmp(event, "run.started") != 0) {
		json_object_set_new(
			r, "outcome",
			json_string(al_outcome_name(rs->res->outcome)));
		json_object_set_new(r, "reason",
				    jstr_or_null(rs->res->reason));
		/* The host operations the run called: each operation and
		 * its outcome, never a payload (docs/toolbelt.md). */
		json_t *calls = rs->res->host_calls_json
					? json_loads(rs->res->host_calls_json,
						     0, NULL)
					: NULL;
		if (calls != NULL)
			json_object_set_new(r, "host_calls", calls);
	}
	return r;
}

static int audit_write(run_state *rs, const char *event, bool full)
{
	json_t *rec = audit_record(rs, event);
	int rc = rec ? al_audit_append(rs->h->db, rec, full, NULL) : -ENOMEM;
	json_decref(rec);
	if (rc < 0)
		al_metrics_audit_failure(rs->h->metrics);
	else
		al_metrics_audit_record(rs->h->metrics, full);
	return rc;
}

/* Whether a run's end (run.finished, run.denied) is committed with its own
 * sync.  "auto" syncs it unless the run's result is already durable where
 * recovery finds it: airlockd's durable runs, whose supervisor synced
 * result.json before the daemon was told (docs/durability.md, "Recovery"
 * writes an end lost with the machine from it). */
static bool end_full(const run_state *rs)
{
	switch (rs->h->cfg->audit_finished_sync) {
	case AL_AUDIT_SYNC_FULL:
		return true;
	case AL_AUDIT_SYNC_NORMAL:
		return false;
	case AL_AUDIT_SYNC_AUTO:
	default:
		return !rs->result_durable;
	}
}

/* Turns the result into a refusal (no process fields). */
static int refuse(run_state *rs, al_outcome outcome, const char *reason)
{
	al_result *r = rs->res;
	r->has_exit_code = r->has_signal = false;
	r->exit_code = r->signal = 0;
	for (int s = 0; s < 2; s++) {
		free(r->output[s].data);
		r->output[s].data = NULL;
		r->output[s].len = 0;
		r->truncated[s] = false;
		r->output_seen[s] = 0;
	}
	memset(&r->usage, 0, sizeof(r->usage));
	r->started_at_ms = 0;
	r->finished_at_ms = al_now_ms();
	return al_result_set_outcome(r, outcome, reason);
}

static void announce(run_state *rs)
{
	if (rs->opts && rs->opts->on_run_id)
		rs->opts->on_run_id(rs->opts->on_run_id_ctx, rs->res->run_id);
}

static void count(run_state *rs)
{
	int64_t now = al_now_ms();
	al_metrics_run(rs->h->metrics, rs->res->outcome, rs->provider_id,
		       rs->req ? rs->req->language : NULL,
		       now > rs->t0 ? (uint64_t)(now - rs->t0) : 0);
}

static void release_slots(run_state *rs)
{
	if (rs->slot_held)
		al_slots_release(rs->h->slots, rs->tenant_name);
	rs->slot_held = false;
	for (; rs->extra_slots > 0; rs->extra_slots--)
		al_slots_release(rs->h->slots, rs->tenant_name);
}

/* A refusal before run.started: audited as run.denied. */
static int deny(run_state *rs, al_outcome outcome, const char *reason)
{
	if (refuse(rs, outcome, reason) < 0)
		return -ENOMEM;
	(void)audit_write(rs, "run.denied", end_full(rs));
	return 0;
}

/* Caps a stream to `cap` bytes (backing off to a UTF-8 boundary when the
 * stream is text) and appends the one truncation notice. */
static int cap_stream(al_result *r, int s, uint64_t cap)
{
	al_bytes *b = &r->output[s];
	bool cut = b->len > cap;
	if (!cut && !r->truncated[s])
		return 0;
	if (r->output_seen[s] < b->len)
		r->output_seen[s] = b->len;
	size_t keep = cut ? (size_t)cap : b->len;
	if (cut && al_utf8_valid(b->data, b->len))
		while (keep > 0 && (b->data[keep] & 0xC0) == 0x80)
			keep--;
	unsigned char *nd =
		realloc(b->data, keep + sizeof(truncation_notice));
	if (!nd)
		return -ENOMEM;
	memcpy(nd + keep, truncation_notice, sizeof(truncation_notice));
	b->data = nd;
	b->len = keep + sizeof(truncation_notice) - 1;
	r->truncated[s] = true;
	return 0;
}

/* ---- execution on a worker thread ----------------------------------- */

static void run_exec_unref(run_exec *x)
{
	pthread_mutex_lock(&x->lock);
	unsigned left = --x->refs;
	pthread_mutex_unlock(&x->lock);
	if (left)
		return;
	al_secrets_env_free(x->host_env, x->n_host_env);
	al_request_free(x->req);
	al_result_free(x->res);
	al_cancel_free(x->cancel);
	al_manifest_free(x->manifest);
	al_bundle_free(x->bundle);
	al_artifacts_close(&x->store);
	free(x->tool_dir);
	free(x->tool_bin);
	if (x->tool_token != NULL)
		al_explicit_free_str(x->tool_token);
	free(x->build_cache_dir);
	if (x->efd >= 0)
		close(x->efd);
	pthread_mutex_destroy(&x->lock);
	free(x);
}

static void forward_output(void *ctx, int stream, const unsigned char *data,
			   size_t len)
{
	run_exec *x = ctx;
	/* Held while calling out, so once the host abandons the run no
	 * output reaches a caller that may have gone. */
	pthread_mutex_lock(&x->lock);
	if (!x->abandoned && x->on_output)
		x->on_output(x->on_output_ctx, stream, data, len);
	pthread_mutex_unlock(&x->lock);
}

static void *worker_main(void *arg)
{
	run_exec *x = arg;
	al_host *h = x->host;
	al_exec ex = {
		AL_ABI_HEADER(al_exec),
		.run_id = x->run_id,
		.request = x->req,
		.on_output = x->on_output ? forward_output : NULL,
		.on_output_ctx = x,
		.cancel = x->cancel,
		.host_env = (const char *const *)x->host_env,
		.n_host_env = x->n_host_env,
		.bundle = x->bundle,
		.manifest = x->manifest,
		.artifact_dir = x->store.path,
		.tool_dir = x->tool_dir,
		.tool_bin_dir = x->tool_bin,
		.tool_token = x->tool_token,
		.build_cache_dir = x->build_cache_dir,
		.build_cache_bytes = h->cfg->build_cache_bytes,
	};
	al_error *perr = NULL;
	int rc = x->req->n_tests > 0
			 ? al_judge_execute(x->ref->ops, x->ref->handle, &ex,
					    x->parallel, x->res, &perr)
			 : x->ref->ops->execute(x->ref->handle, &ex, x->res,
						&perr);
	if (rc < 0) {
		/* The caller sees provider_error; the provider's own message
		 * (which may name what a caller must not see) goes to the
		 * operator's log only. */
		char *cut = strndup(al_error_get_message(perr), 2048);
		al_log_field f[] = {
			AL_LF_S("run_id", x->run_id),
			AL_LF_S("provider", x->ref->ops->id),
			AL_LF_S("call", "execute"),
			AL_LF_S("error", cut != NULL ? cut : "(out of memory)"),
		};
		al_log_fields(AL_LOG_ERROR, "the provider failed", f,
			      sizeof(f) / sizeof(f[0]));
		free(cut);
	}
	al_error_free(perr);
	uint64_t one = 1;
	pthread_mutex_lock(&x->lock);
	x->exec_rc = rc;
	x->done = true;
	pthread_mutex_unlock(&x->lock);
	if (write(x->efd, &one, sizeof(one)) < 0) {
		/* The host then waits out its deadline; nothing else to do. */
	}
	al_selector_put(&h->sel, x->ref);
	run_exec_unref(x);
	/* Last: after this the host may be freed. */
	pthread_mutex_lock(&h->lock);
	h->workers--;
	pthread_cond_broadcast(&h->workers_cond);
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

static void live_add(al_host *h, live_run *lr)
{
	pthread_mutex_lock(&h->lock);
	lr->next = h->live;
	h->live = lr;
	pthread_mutex_unlock(&h->lock);
}

static void live_remove(al_host *h, live_run *lr)
{
	pthread_mutex_lock(&h->lock);
	for (live_run **pp = &h->live; *pp; pp = &(*pp)->next)
		if (*pp == lr) {
			*pp = lr->next;
			break;
		}
	pthread_mutex_unlock(&h->lock);
}

/* Takes a provider's result (owned) as the run's: identity and facts are
 * the host's; each stream is capped again. */
static int take_result(run_state *rs, al_result *pr, int64_t start)
{
	int rc = 0;
	memcpy(pr->run_id, rs->res->run_id, sizeof(pr->run_id));
	al_facts_free(pr->provider);
	pr->provider = NULL;
	if (!pr->started_at_ms)
		pr->started_at_ms = start;
	if (!pr->finished_at_ms)
		pr->finished_at_ms = al_now_ms();
	al_result_free(rs->res);
	rs->res = pr;
	if (al_outcome_ran(pr->outcome))
		for (int s = 0; s < 2 && rc == 0; s++)
			rc = cap_stream(pr, s, rs->req->limits.output_bytes);
	return rc;
}

/* Serves the run's toolbelt; the worker gets copies of what it names. */
static int host_toolbelt_start(run_state *rs, run_exec *x, al_host_tb *tb)
{
	char *ops = NULL;
	int64_t deadline = al_now_ms() + (int64_t)rs->req->limits.wall_ms +
			   (int64_t)rs->h->cfg->grace_ms;
	int rc = rs->tenant != NULL
			 ? al_operations_subset(rs->tenant->operations_json,
						&rs->req->grant, &ops)
			 : 0;
	if (rc == 0)
		rc = al_host_tb_start(tb, rs->h->state_dir, x->run_id, rs->req,
				      ops, deadline);
	free(ops);
	if (rc == 0 && ((x->tool_dir = strdup(tb->tool_dir)) == NULL ||
			(x->tool_bin = strdup(tb->bin)) == NULL ||
			(x->tool_token = strdup(tb->token)) == NULL))
		rc = -ENOMEM;
	if (rc < 0) {
		al_logf(AL_LOG_WARN, x->run_id, "cannot serve the toolbelt: %s",
			strerror(-rc));
		(void)al_host_tb_finish(tb, NULL);
	}
	return rc;
}

/* Runs the request on the selected handle and waits at most wall + grace.
 * Fills rs->res (replacing it) with the outcome. */
static int execute(run_state *rs, char **host_env, size_t n_host_env)
{
	al_host *h = rs->h;
	run_exec *x = calloc(1, sizeof(*x));
	pthread_t tid;
	int rc = 0;

	if (!x) {
		al_secrets_env_free(host_env, n_host_env);
		return refuse(rs, AL_OUTCOME_UNAVAILABLE, "start_failed");
	}
	pthread_mutex_init(&x->lock, NULL);
	x->store.dirfd = -1;
	x->refs = 2; /* this function and the worker */
	x->host = h;
	x->ref = rs->sel.ref;
	x->req = al_request_dup(rs->req);
	memcpy(x->run_id, rs->res->run_id, sizeof(x->run_id));
	x->host_env = host_env;
	x->n_host_env = n_host_env;
	x->cancel = al_cancel_new();
	x->res = al_result_new();
	x->efd = eventfd(0, EFD_CLOEXEC);
	if (rs->req->grant.streaming && rs->opts && rs->opts->on_output) {
		x->on_output = rs->opts->on_output;
		x->on_output_ctx = rs->opts->on_output_ctx;
	}
	if (!x->req || !x->cancel || !x->res || x->efd < 0) {
		x->refs = 1;
		run_exec_unref(x);
		return refuse(rs, AL_OUTCOME_UNAVAILABLE, "start_failed");
	}
	/* The immutable bundle the provider materialises, and the store its
	 * artifacts go to (docs/workspaces.md). */
	const char *why = NULL;
	if (al_bundle_new(x->req, &x->bundle, NULL) < 0 ||
	    al_manifest_new(x->bundle, &x->manifest) < 0)
		why = "start_failed";
	else if (al_artifacts_create(h->state_dir, x->run_id, &x->store,
				     NULL) < 0)
		why = "artifacts_unavailable";
	/* The toolbelt, served here for as long as the run lives. */
	al_host_tb tb = {.dirfd = -1};
	if (!why && rs->req->grant.toolbelt &&
	    rs->sel.facts->safety_class != AL_SAFETY_REMOTE &&
	    host_toolbelt_start(rs, x, &tb) < 0)
		why = "toolbelt_unavailable";
	if (why) {
		x->refs = 1;
		run_exec_unref(x);
		return refuse(rs, AL_OUTCOME_UNAVAILABLE, why);
	}
	/* A compiled language's artifacts are kept beneath the state dir
	 * (docs/languages.md, "Build cache"). */
	if (h->cfg->build_cache_bytes > 0 &&
	    al_language_compiled(x->req->language))
		x->build_cache_dir = al_host_build_cache_dir(
			h->state_dir, rs->tenant_name, h->cfg->build_cache_shared);
	/* Judged cases: the run's slot and the extra ones it holds. */
	x->parallel = 1 + rs->extra_slots;
	/* The worker owns the handle reference from here on. */
	rs->sel.ref = NULL;
	live_run lr = {.x = x};
	memcpy(lr.run_id, x->run_id, sizeof(lr.run_id));
	snprintf(lr.tenant, sizeof(lr.tenant), "%s", rs->tenant_name);
	live_add(h, &lr);

	int64_t start = al_now_ms();
	pthread_mutex_lock(&h->lock);
	h->workers++;
	pthread_mutex_unlock(&h->lock);
	if (pthread_create(&tid, NULL, worker_main, x) != 0) {
		pthread_mutex_lock(&h->lock);
		h->workers--;
		pthread_mutex_unlock(&h->lock);
		live_remove(h, &lr);
		rs->sel.ref = x->ref;
		x->refs = 1;
		run_exec_unref(x);
		(void)al_host_tb_finish(&tb, NULL);
		return refuse(rs, AL_OUTCOME_UNAVAILABLE, "start_failed");
	}
	pthread_detach(tid);

	int64_t deadline = start +
			   (int64_t)al_judge_budget_ms(rs->req, x->parallel,
						       h->cfg->grace_ms) +
			   (int64_t)h->cfg->grace_ms;
	al_cancel *caller = rs->opts ? rs->opts->cancel : NULL;
	bool done = false;
	for (;;) {
		struct pollfd pf[2] = {{.fd = x->efd, .events = POLLIN},
				       {.fd = -1, .events = POLLIN}};
		if (caller && al_cancel_state(x->cancel) == AL_CANCEL_NONE)
			pf[1].fd = al_cancel_fd(caller);
		int64_t left = deadline - al_now_ms();
		if (left <= 0)
			break;
		int pr = poll(pf, 2, left > 1000 ? 1000 : (int)left);
		if (pr < 0 && errno != EINTR)
			break;
		pthread_mutex_lock(&x->lock);
		done = x->done;
		pthread_mutex_unlock(&x->lock);
		if (done)
			break;
		if (caller && al_cancel_state(caller) != AL_CANCEL_NONE)
			al_cancel_fire(x->cancel, al_cancel_state(caller));
	}
	pthread_mutex_lock(&x->lock);
	done = x->done;
	if (!done)
		x->abandoned = true;
	pthread_mutex_unlock(&x->lock);
	live_remove(h, &lr);
	/* The process is seen to have finished (or abandoned): the
	 * toolbelt stops, and a declaration takes effect on a result. */
	(void)al_host_tb_finish(&tb, done && x->exec_rc == 0 ? x->res : NULL);

	if (!done) {
		/* The provider overran wall + grace: cancel it, stop
		 * waiting, and record the timeout.  A provider ignoring the
		 * token keeps its thread (docs/host.md). */
		al_cancel_fire(x->cancel, AL_CANCEL_CANCELLED);
		rc = refuse(rs, AL_OUTCOME_TIMED_OUT, "host_deadline");
		rs->res->started_at_ms = start;
		rs->res->usage.wall_ms = (uint64_t)(al_now_ms() - start);
	} else if (x->exec_rc < 0 || al_result_check_shape(x->res) < 0) {
		rc = refuse(rs, AL_OUTCOME_UNAVAILABLE, "provider_error");
	} else {
		al_result *pr = x->res;
		x->res = NULL;
		rc = take_result(rs, pr, start);
	}
	run_exec_unref(x);
	return rc;
}

/* ---- the pipeline --------------------------------------------------- */

static int store_result(run_state *rs)
{
	char *json = al_result_to_json(rs->res, 0);
	if (!json)
		return -ENOMEM;
	al_idem_finish(rs->h->idem, rs->tenant_name, rs->req->idempotency_key,
		       rs->canonical_sha256, json);
	free(json);
	return 0;
}

/* Ends the idempotency claim.  A result is kept once a provider was
 * called: running again could repeat side effects.  Refusals before that
 * are not kept, so a retry runs. */
static void settle_claim(run_state *rs, int rc)
{
	if (!rs->claimed)
		return;
	rs->claimed = false;
	if (rs->called && rc == 0 && store_result(rs) == 0)
		return;
	al_idem_finish(rs->h->idem, rs->tenant_name, rs->req->idempotency_key,
		       rs->canonical_sha256, NULL);
}

/* rs->host_env: pass_env, the granted secrets from the store (except
 * those the caller forwarded), then the forwarded variables
 * (host/run_env.h).  0, 1 when a secret cannot be read, negative errno on
 * allocation failure. */
static int resolve_env(run_state *rs)
{
	return al_run_env_resolve(rs->h->cfg, rs->tenant, rs->req,
				  &rs->fwd_env, &rs->n_fwd_env, &rs->host_env,
				  &rs->n_host_env);
}

/* Steps 7–9 and the secrets.  0: admitted (claim, run.started, slot and
 * secrets held by rs); 1: the request ended here (rs->res is its outcome,
 * audited, the claim settled); negative errno on allocation failure. */
static int admit_selected(run_state *rs)
{
	al_host *h = rs->h;
	int rc = 0;

	/* 7. idempotency */
	if (rs->req->idempotency_key) {
		char *stored = NULL;
		int ir = al_idem_claim(h->idem, rs->tenant_name,
				       rs->req->idempotency_key,
				       rs->canonical_sha256, &stored, NULL);
		if (ir == AL_IDEM_CONFLICT) {
			rc = deny(rs, AL_OUTCOME_CONFLICT,
				  "idempotency_conflict");
			goto out;
		}
		if (ir < 0) {
			rc = deny(rs, AL_OUTCOME_UNAVAILABLE,
				  "idempotency_unavailable");
			goto out;
		}
		if (ir == AL_IDEM_STORED) {
			/* The stored result, run id included: no second
			 * run and no new audit record. */
			al_result *prev = NULL;
			int pr = al_result_from_json(stored, strlen(stored),
						     &prev, NULL);
			free(stored);
			if (pr < 0) {
				rc = deny(rs, AL_OUTCOME_UNAVAILABLE,
					  "idempotency_unavailable");
				goto out;
			}
			al_result_free(rs->res);
			rs->res = prev;
			goto out;
		}
		rs->claimed = true;
	}
	rs->res->provider = al_facts_dup(rs->sel.facts);

	/* 8. audit run.started, durably, before any provider call */
	if (audit_write(rs, "run.started", true) < 0) {
		rc = refuse(rs, AL_OUTCOME_UNAVAILABLE, "audit_refused");
		goto out;
	}
	/* 9. slot */
	al_cancel *caller = rs->opts ? rs->opts->cancel : NULL;
	if (caller && al_cancel_state(caller) != AL_CANCEL_NONE) {
		rc = refuse(rs, AL_OUTCOME_CANCELLED, "caller");
		goto finished;
	}
	int sr = al_slots_acquire(h->slots, rs->tenant_name,
				  rs->tenant->concurrency, h->cfg->slot_wait_ms,
				  caller);
	if (sr < 0) {
		rc = sr == -ECANCELED
			     ? refuse(rs, AL_OUTCOME_CANCELLED, "caller")
			     : refuse(rs, AL_OUTCOME_UNAVAILABLE, "busy");
		goto finished;
	}
	rs->slot_held = true;
	/* Judged cases run side by side in as many slots as the tenant has
	 * free now (never waiting for one). */
	for (size_t i = 1; i < rs->req->n_tests && i < AL_JUDGE_MAX_PARALLEL &&
			   al_slots_acquire(h->slots, rs->tenant_name,
					    rs->tenant->concurrency, 0,
					    NULL) == 0;
	     i++)
		rs->extra_slots++;
	/* Secrets are read only now, at launch; those the caller forwarded
	 * are not read from the store. */
	if ((rc = resolve_env(rs)) != 0) {
		release_slots(rs);
		if (rc < 0)
			goto out;
		rc = refuse(rs, AL_OUTCOME_UNAVAILABLE, "secret_unavailable");
		goto finished;
	}
	return 0;
finished:
	(void)audit_write(rs, "run.finished", end_full(rs));
out:
	settle_claim(rs, rc);
	return rc < 0 ? rc : 1;
}

/* Step 11 once the execution ended: the slot goes back, run.finished is
 * audited (unless another process already did), the claim is settled. */
static int after_execution(run_state *rs, int rc, bool skip_audit)
{
	release_slots(rs);
	if (rc == 0 && !rs->res->provider)
		rs->res->provider = al_facts_dup(rs->own_facts ? rs->own_facts
							       : rs->sel.facts);
	for (unsigned attempt = 0; !skip_audit; attempt++)
		if (audit_write(rs, "run.finished", end_full(rs)) == 0 ||
		    !rs->audit_retry ||
		    rs->audit_retry(rs->audit_retry_ctx, attempt) < 0)
			break;
	settle_claim(rs, rc);
	return rc;
}

static int run_selected(run_state *rs)
{
	int rc = admit_selected(rs);
	announce(rs);
	if (rc != 0)
		return rc < 0 ? rc : 0;
	/* 10. execute (the env strings move to the worker) */
	rs->called = true;
	rc = execute(rs, rs->host_env, rs->n_host_env);
	rs->host_env = NULL;
	rs->n_host_env = 0;
	return after_execution(rs, rc, false);
}

static void run_state_free(run_state *rs)
{
	if (!rs)
		return;
	release_slots(rs);
	if (rs->sel.ref)
		al_selector_put(&rs->h->sel, rs->sel.ref);
	al_selection_clear(&rs->sel);
	al_secrets_env_free(rs->host_env, rs->n_host_env);
	al_secrets_env_free(rs->fwd_env, rs->n_fwd_env);
	al_request_free(rs->req);
	free(rs->canonical);
	al_result_free(rs->res);
	free(rs->own_tenant);
	free(rs->own_principal);
	free(rs->own_provider);
	al_facts_free(rs->own_facts);
	free(rs);
}

/* An admitted run outlives the call: it keeps its own copy of the
 * caller's context and gives its provider handle back (the execution
 * happens in another process). */
static int hand_over(run_state *rs, al_admission **adm)
{
	const char *principal = rs->ctx ? rs->ctx->principal : NULL;
	if (!(rs->own_tenant = strdup(rs->tenant_name)) ||
	    al_strdup_opt(principal, &rs->own_principal) < 0)
		return -ENOMEM;
	rs->own_ctx.tenant = rs->own_tenant;
	rs->own_ctx.principal = rs->own_principal;
	rs->ctx = &rs->own_ctx;
	rs->tenant_name = rs->own_tenant;
	rs->opts = NULL;
	al_selector_put(&rs->h->sel, rs->sel.ref);
	rs->sel.ref = NULL;
	*adm = (al_admission *)rs;
	return 0;
}

/* After selection: the limits the ceilings gate set become the request's
 * explicit ones — the canonical JSON (what a supervisor executes, what
 * the idempotency key is bound to) carries only explicit limits, so a
 * lowered default would otherwise be lost on the way.  A limit from a
 * built-in ceiling the chosen provider does not enforce goes back to the
 * contract's default for it (docs/host.md, step 5). */
static int settle_limits(run_state *rs, unsigned lowered, unsigned soft)
{
	al_limits *l = &rs->req->limits;
	al_limits def = {0};
	unsigned enforced = rs->sel.facts ? rs->sel.facts->limits : 0;
	al_limits_apply_defaults(&def);
	for (unsigned bit = 1; bit & AL_LIMIT__ALL; bit <<= 1) {
		if (!(lowered & bit))
			continue;
		if ((soft & bit) && !(enforced & bit))
			*al_limits_field(l, bit) = *al_limits_field(&def, bit);
		else
			l->set |= bit;
	}
	if (lowered) {
		char *text = al_request_to_json(rs->req);
		if (!text)
			return -ENOMEM;
		free(rs->canonical);
		rs->canonical = text;
	}
	al_sha256_hex(rs->canonical, strlen(rs->canonical),
		      rs->canonical_sha256);
	return 0;
}

/* A caller-chosen run id must never have named a run before, whatever
 * is left of it: an audit record, an artifact store or a stored
 * idempotent result (the daemon also checks its run directories).  An
 * id reused would inherit what the earlier run left under it.  Doubt
 * (an error reading a record) counts as used. */
static bool run_id_ever_used(al_host *h, const char *run_id)
{
	return al_audit_has_event(h->db, run_id, NULL) != 0 ||
	       al_artifacts_exist(h->state_dir, run_id) != 0 ||
	       al_idem_names_run(h->idem, run_id) != 0;
}

/* What a step of the pipeline decided: go on; stop, the refusal it
 * recorded (deny) being the run's result, *rc deny's return; or fail with
 * *rc a negative errno and nothing recorded. */
typedef enum step { STEP_ON, STEP_REFUSED, STEP_FAILED } step;

static step refused(run_state *rs, al_outcome outcome, const char *reason,
		    int *rc)
{
	*rc = deny(rs, outcome, reason);
	return STEP_REFUSED;
}

static step failed(int err, int *rc)
{
	*rc = err;
	return STEP_FAILED;
}

/* The reason of a parse or check error, "request" when it has none. */
static const char *reason_of(const al_error *err)
{
	return al_error_get_reason(err)[0] ? al_error_get_reason(err)
					   : "request";
}

/* Step 1, validate: the canonical JSON form re-parsed strictly, so a
 * request built in C passes the same checks as one sent as JSON. */
static step validate(run_state *rs, const al_request *in,
		     const char *invalid_reason, int *rc)
{
	al_error *perr = NULL;
	step s = STEP_ON;
	if (invalid_reason || !in)
		return refused(rs, AL_OUTCOME_INVALID_REQUEST,
			       invalid_reason ? invalid_reason : "request", rc);
	rs->canonical = al_request_to_json(in);
	if (!rs->canonical) {
		/* The only request JSON cannot carry is one whose code or a
		 * name is not UTF-8 text (the codec sends every byte string
		 * that is not as base64). */
		if (!al_utf8_valid(in->code.data, in->code.len) ||
		    memchr(in->code.data, '\0', in->code.len) != NULL)
			return refused(rs, AL_OUTCOME_INVALID_REQUEST, "code",
				       rc);
		return failed(-ENOMEM, rc);
	}
	/* then the files and outputs the workspace grant cannot hold */
	if (al_request_from_json(rs->canonical, strlen(rs->canonical),
				 &rs->req, &perr) < 0 ||
	    al_bundle_request_check(rs->req, &perr) < 0)
		s = refused(rs, AL_OUTCOME_INVALID_REQUEST, reason_of(perr), rc);
	al_error_free(perr);
	if (s != STEP_ON)
		return s;
	al_sha256_hex(rs->req->code.data, rs->req->code.len, rs->code_sha256);
	if (al_plan_sha256(rs->req, rs->plan_sha256) < 0)
		return failed(-ENOMEM, rc);
	return STEP_ON;
}

/* Step 1b, the run id the caller chose (airlockd); a refusal keeps the
 * new id, so no record names a run it is not about. */
static step take_run_id(run_state *rs, const al_admit_options *aopts, int *rc)
{
	if (!aopts || !aopts->run_id)
		return STEP_ON;
	if (!al_run_id_canonical(aopts->run_id))
		return refused(rs, AL_OUTCOME_INVALID_REQUEST, "run_id", rc);
	if (run_id_ever_used(rs->h, aopts->run_id) ||
	    (aopts->claim_run_id &&
	     aopts->claim_run_id(aopts->claim_ctx, aopts->run_id) != 0))
		return refused(rs, AL_OUTCOME_CONFLICT, "run_id_in_use", rc);
	snprintf(rs->res->run_id, sizeof(rs->res->run_id), "%s", aopts->run_id);
	return STEP_ON;
}

/* Step 2, enabled; step 3, the tenant and its language allow-list; 3b, a
 * forwarded environment, from a tenant trusted to send one; 3c,
 * variables that load code, unless the tenant allows them. */
/* The run a request continues (docs/host.md): this tenant's, finished,
 * not yet continued; an unknown run and another tenant's answer alike. */
static step check_continues(run_state *rs, const al_admit_options *aopts,
			    int *rc)
{
	if (rs->req->continues == NULL)
		return STEP_ON;
	int cr = aopts && aopts->check_continues
			 ? aopts->check_continues(aopts->continues_ctx,
						  rs->tenant_name,
						  rs->req->continues)
			 : -ENOTSUP;
	if (cr == -ENOMEM)
		return failed(cr, rc);
	if (cr >= 0)
		return STEP_ON;
	return refused(rs,
		       cr == -EBUSY || cr == -EALREADY ? AL_OUTCOME_CONFLICT
						       : AL_OUTCOME_DENIED,
		       cr == -EBUSY	   ? "continues:running"
		       : cr == -EALREADY ? "continues:already_continued"
		       : cr == -ENOTSUP  ? "continues:unsupported"
					  : "continues:not_found",
		       rc);
}

static step admit_tenant(run_state *rs, const al_host_context *ctx,
			 const al_admit_options *aopts, int *rc)
{
	char buf[64];
	const char *why;
	if (!rs->h->cfg->execution_enabled)
		return refused(rs, AL_OUTCOME_DISABLED, "execution_disabled", rc);
	rs->tenant = al_config_tenant(rs->h->cfg, ctx ? ctx->tenant : NULL);
	if (!rs->tenant)
		return refused(rs, AL_OUTCOME_DENIED, "gate:tenant", rc);
	rs->tenant_name = rs->tenant->name;
	if (aopts && aopts->traceparent &&
	    strlen(aopts->traceparent) == sizeof(rs->traceparent) - 1)
		memcpy(rs->traceparent, aopts->traceparent,
		       sizeof(rs->traceparent));
	if (aopts && aopts->forwarded_env) {
		if (!rs->tenant->accept_forwarded_env)
			return refused(rs, AL_OUTCOME_DENIED,
				       "gate:forwarded_env", rc);
		int fr = al_forwarded_env_parse(aopts->forwarded_env,
						&rs->fwd_env, &rs->n_fwd_env,
						&why);
		if (fr == -ENOMEM)
			return failed(fr, rc);
		if (fr < 0)
			return refused(rs, AL_OUTCOME_INVALID_REQUEST, why, rc);
	}
	if ((why = al_gate_language(rs->tenant, rs->req)) ||
	    (why = al_gate_image(rs->tenant, rs->req)))
		return refused(rs, AL_OUTCOME_DENIED, why, rc);
	step s = check_continues(rs, aopts, rc);
	if (s != STEP_ON)
		return s;
	if ((why = al_gate_env(rs->tenant, rs->req, rs->fwd_env, rs->n_fwd_env,
			       buf, sizeof(buf))))
		return refused(rs, AL_OUTCOME_DENIED, why, rc);
	return STEP_ON;
}

/* Step 4, the grant (or a grant pinned to this exact plan); step 5, the
 * ceilings, which may lower limits (*lowered; *soft: from a built-in
 * ceiling, settle_limits). */
static step gate_request(run_state *rs, unsigned *lowered, unsigned *soft,
			 int *rc)
{
	char buf[64];
	const char *why;
	if ((why = al_gate_grant(rs->tenant, rs->req, rs->code_sha256,
				 rs->plan_sha256)) ||
	    (why = al_gate_ceilings(rs->tenant, rs->req, lowered, soft, buf,
				    sizeof(buf))))
		return refused(rs, AL_OUTCOME_DENIED, why, rc);
	return STEP_ON;
}

/* Step 6, the provider: the first candidate that can run the request. */
static step choose_provider(run_state *rs, unsigned lowered, unsigned soft,
			    int *rc)
{
	al_host *h = rs->h;
	int sr = al_select(&h->sel, rs->req, soft, &rs->sel);
	if (sr < 0)
		return failed(sr, rc);
	if (rs->sel.facts)
		rs->provider_id = h->sel.cands[rs->sel.chosen].ops->id;
	if (sr == 1) {
		step s = refused(rs, rs->sel.outcome, rs->sel.reason, rc);
		if (*rc == 0 && rs->sel.facts)
			rs->res->provider = al_facts_dup(rs->sel.facts);
		return s;
	}
	rs->selected = true;
	if ((*rc = settle_limits(rs, lowered, soft)) < 0)
		return STEP_FAILED;
	return STEP_ON;
}

/* Steps 1–6, then either the in-process execution (adm NULL: the CLI) or
 * the admission handed to the caller (the daemon). */
static int pipeline(al_host *h, const al_host_context *ctx,
		    const al_request *in, const char *invalid_reason,
		    const al_run_options *opts, const al_admit_options *aopts,
		    al_admission **adm, al_result **out)
{
	run_state *rs = calloc(1, sizeof(*rs));
	unsigned lowered = 0, soft = 0;
	int rc = 0;

	*out = NULL;
	if (adm)
		*adm = NULL;
	if (!rs)
		return -ENOMEM;
	rs->h = h;
	rs->ctx = ctx;
	rs->opts = opts;
	rs->t0 = al_now_ms();
	if (!(rs->res = al_result_new())) {
		free(rs);
		return -ENOMEM;
	}
	al_run_id_new(rs->res->run_id);

	step s = validate(rs, in, invalid_reason, &rc);
	if (s == STEP_ON)
		s = take_run_id(rs, aopts, &rc);
	if (s == STEP_ON)
		s = admit_tenant(rs, ctx, aopts, &rc);
	if (s == STEP_ON)
		s = gate_request(rs, &lowered, &soft, &rc);
	if (s == STEP_ON)
		s = choose_provider(rs, lowered, soft, &rc);
	if (s == STEP_FAILED)
		goto out;
	if (s == STEP_REFUSED)
		goto done;
	if (!adm) {
		rc = run_selected(rs);
		goto counted;
	}
	rc = admit_selected(rs);
	if (rc == 0) {
		rc = hand_over(rs, adm);
		if (rc == 0)
			return 0;
		/* Cannot keep it: end it as not started. */
		(void)refuse(rs, AL_OUTCOME_UNAVAILABLE, "start_failed");
		(void)after_execution(rs, 0, false);
		goto out;
	}
	if (rc > 0)
		rc = 0;
done:
	announce(rs);
counted:
	if (rc == 0)
		count(rs);
out:
	if (rc == 0) {
		*out = rs->res;
		rs->res = NULL;
	}
	run_state_free(rs);
	return rc;
}

int al_host_run(al_host *host, const al_host_context *ctx,
		const al_request *req, const al_run_options *opts,
		al_result **out)
{
	return pipeline(host, ctx, req, req ? NULL : "request", opts, NULL,
			NULL, out);
}

/* Parses the body, then runs the pipeline (a malformed body becomes an
 * invalid_request result). */
static int pipeline_json(al_host *host, const al_host_context *ctx,
			 const char *json, size_t len,
			 const al_run_options *opts,
			 const al_admit_options *aopts, al_admission **adm,
			 al_result **out)
{
	al_request *req = NULL;
	al_error *perr = NULL;
	int rc;
	if (al_request_from_json(json, len, &req, &perr) < 0) {
		const char *reason = al_error_get_reason(perr);
		rc = pipeline(host, ctx, NULL, reason[0] ? reason : "request",
			      opts, aopts, adm, out);
		al_error_free(perr);
		return rc;
	}
	rc = pipeline(host, ctx, req, NULL, opts, aopts, adm, out);
	al_request_free(req);
	return rc;
}

int al_host_run_json(al_host *host, const al_host_context *ctx,
		     const char *json, size_t len, const al_run_options *opts,
		     al_result **out)
{
	return pipeline_json(host, ctx, json, len, opts, NULL, NULL, out);
}

/* ---- the split pipeline (host/admission.h) -------------------------- */

int al_host_admit_json(al_host *host, const al_host_context *ctx,
		       const char *json, size_t len,
		       const al_run_options *opts, al_admission **adm,
		       al_result **out)
{
	return pipeline_json(host, ctx, json, len, opts, NULL, adm, out);
}

int al_host_admit_json_ex(al_host *host, const al_host_context *ctx,
			  const char *json, size_t len,
			  const al_run_options *opts,
			  const al_admit_options *aopts, al_admission **adm,
			  al_result **out)
{
	return pipeline_json(host, ctx, json, len, opts, aopts, adm, out);
}

const char *al_admission_run_id(const al_admission *a)
{
	return a->rs.res->run_id;
}

const char *al_admission_tenant(const al_admission *a)
{
	return a->rs.tenant_name;
}

const char *al_admission_principal(const al_admission *a)
{
	return a->rs.own_principal;
}

const al_request *al_admission_request(const al_admission *a)
{
	return a->rs.req;
}

const char *al_admission_request_json(const al_admission *a)
{
	return a->rs.canonical;
}

const char *al_admission_provider(const al_admission *a)
{
	return a->rs.provider_id;
}

int al_admission_operations(const al_admission *a, char **out)
{
	*out = NULL;
	if (a->rs.tenant == NULL)
		return 0;
	return al_operations_subset(a->rs.tenant->operations_json,
				    &a->rs.req->grant, out);
}

const char *al_admission_provider_config(const al_admission *a)
{
	const al_selector *s = &a->rs.h->sel;
	if (!a->rs.selected || a->rs.sel.chosen >= s->n ||
	    !s->cands[a->rs.sel.chosen].cfg)
		return NULL;
	return s->cands[a->rs.sel.chosen].cfg->config_json;
}

const char *al_admission_provider_module(const al_admission *a)
{
	const al_selector *s = &a->rs.h->sel;
	if (!a->rs.selected || a->rs.sel.chosen >= s->n ||
	    !s->cands[a->rs.sel.chosen].cfg)
		return NULL;
	return s->cands[a->rs.sel.chosen].cfg->module;
}

const al_facts *al_admission_facts(const al_admission *a)
{
	return a->rs.own_facts ? a->rs.own_facts : a->rs.sel.facts;
}

const char *const *al_admission_host_env(const al_admission *a, size_t *n)
{
	*n = a->rs.n_host_env;
	return (const char *const *)a->rs.host_env;
}

uint64_t al_admission_grace_ms(const al_admission *a)
{
	return a->rs.h->cfg->grace_ms;
}

void al_admission_build(const al_admission *a, uint64_t *cache_bytes,
			bool *shared, unsigned *parallel, uint64_t *budget_ms)
{
	const al_config *cfg = a->rs.h->cfg;
	*cache_bytes = al_language_compiled(a->rs.req->language)
			       ? cfg->build_cache_bytes
			       : 0;
	*shared = cfg->build_cache_shared;
	*parallel = 1 + a->rs.extra_slots;
	*budget_ms = al_judge_budget_ms(a->rs.req, *parallel, cfg->grace_ms);
}

int64_t al_admission_admitted_ms(const al_admission *a)
{
	return a->rs.t0;
}

int al_host_resume(al_host *h, const al_resume_info *info,
		   al_admission **adm, al_error **err)
{
	run_state *rs = calloc(1, sizeof(*rs));
	al_error *perr = NULL;
	int rc = 0;

	*adm = NULL;
	if (!rs || !(rs->res = al_result_new())) {
		free(rs);
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	}
	rs->h = h;
	rs->t0 = info->admitted_ms;
	snprintf(rs->res->run_id, sizeof(rs->res->run_id), "%s",
		 info->run_id);
	if (!(rs->own_tenant = strdup(info->tenant)) ||
	    al_strdup_opt(info->principal, &rs->own_principal) < 0 ||
	    !(rs->own_provider = strdup(info->provider)) ||
	    !(rs->canonical = strdup(info->request_json))) {
		rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				  "out of memory");
		goto fail;
	}
	rs->own_ctx.tenant = rs->own_tenant;
	rs->own_ctx.principal = rs->own_principal;
	rs->ctx = &rs->own_ctx;
	rs->tenant_name = rs->own_tenant;
	rs->provider_id = rs->own_provider;
	/* The tenant may have left the configuration since: the run is
	 * still finished under its name. */
	rs->tenant = al_config_tenant(h->cfg, info->tenant);
	if (al_request_from_json(rs->canonical, strlen(rs->canonical),
				 &rs->req, &perr) < 0) {
		al_error_free(perr);
		rc = al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL,
				  "request", "the persisted request is invalid");
		goto fail;
	}
	al_sha256_hex(rs->canonical, strlen(rs->canonical),
		      rs->canonical_sha256);
	al_sha256_hex(rs->req->code.data, rs->req->code.len, rs->code_sha256);
	if (al_plan_sha256(rs->req, rs->plan_sha256) < 0) {
		rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				  "out of memory");
		goto fail;
	}
	if (info->facts_json &&
	    al_facts_from_json(info->facts_json, strlen(info->facts_json),
			       &rs->own_facts, NULL) < 0)
		rs->own_facts = NULL; /* the result then names no facts */
	/* The run still occupies a slot when one is free; it is not
	 * refused for lack of one: it is already running. */
	if (al_slots_acquire(h->slots, rs->tenant_name,
			     rs->tenant ? rs->tenant->concurrency : 0, 0,
			     NULL) == 0)
		rs->slot_held = true;
	/* A duplicate arriving now waits for this run's result. */
	if (rs->req->idempotency_key) {
		char *stored = NULL;
		if (al_idem_claim(h->idem, rs->tenant_name,
				  rs->req->idempotency_key,
				  rs->canonical_sha256, &stored,
				  NULL) == AL_IDEM_CLAIMED)
			rs->claimed = true;
		free(stored);
	}
	rs->called = true;
	*adm = (al_admission *)rs;
	return 0;
fail:
	run_state_free(rs);
	return rc;
}

int al_host_finish(al_host *h, al_admission *adm, al_result *res,
		   const al_finish_options *o, al_result **out)
{
	run_state *rs = &adm->rs;
	int rc;

	(void)h;
	*out = NULL;
	rs->called = o->launched;
	rs->audit_retry = o->audit_retry;
	rs->audit_retry_ctx = o->audit_retry_ctx;
	rs->result_durable = o->result_durable && res != NULL;
	al_secrets_env_free(rs->host_env, rs->n_host_env);
	rs->host_env = NULL;
	rs->n_host_env = 0;
	if (o->as_final && res) {
		/* Another process finished it: its result, as it is. */
		al_result_free(rs->res);
		rs->res = res;
		rc = 0;
	} else if (!res) {
		rc = refuse(rs, AL_OUTCOME_UNAVAILABLE,
			    o->refusal ? o->refusal : "lost");
	} else if (al_result_check_shape(res) < 0) {
		al_result_free(res);
		rc = refuse(rs, AL_OUTCOME_UNAVAILABLE, "provider_error");
	} else {
		rc = take_result(rs, res, rs->t0);
	}
	rc = after_execution(rs, rc, o->skip_audit || o->as_final);
	if (rc == 0) {
		count(rs);
		*out = rs->res;
		rs->res = NULL;
	}
	run_state_free(rs);
	return rc;
}

void al_admission_free(al_admission *adm)
{
	if (!adm)
		return;
	run_state *rs = &adm->rs;
	/* Nothing ran: a retry of the same key may run. */
	rs->called = false;
	settle_claim(rs, 0);
	run_state_free(rs);
}

int al_host_audit_has(al_host *h, const char *run_id, const char *event)
{
	return al_audit_has_event(h->db, run_id, event);
}

int al_host_audit_open_starts(al_host *h, const char *from, json_t **starts,
			      char **head, al_error **err)
{
	al_audit_mark f = {0}, hd;
	long long seq = 0;
	*head = NULL;
	bool have = from != NULL &&
		    sscanf(from, "%lld %64s", &seq, f.hash) == 2 &&
		    strlen(f.hash) == 64;
	f.seq = have ? (int64_t)seq : 1;
	int rc = al_audit_open_starts(h->db, have ? &f : NULL, starts, &hd,
				      err);
	if (rc == 0 && !(*head = al_strdup_printf("%lld %s",
						  (long long)hd.seq, hd.hash))) {
		json_decref(*starts);
		*starts = NULL;
		rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				  "out of memory");
	}
	return rc;
}

int al_host_audit_event(al_host *h, json_t *record, al_error **err)
{
	int rc = al_audit_append(h->db, record, false, err);
	if (rc < 0)
		al_metrics_audit_failure(h->metrics);
	else
		al_metrics_audit_record(h->metrics, false);
	return rc;
}

int al_host_audit_close_start(al_host *h, const json_t *start,
			      const char *outcome, const char *reason,
			      const char *detail, al_error **err)
{
	int rc = al_audit_close_start(h->db, start, outcome, reason, detail,
				      err);
	if (rc < 0)
		al_metrics_audit_failure(h->metrics);
	else
		al_metrics_audit_record(h->metrics, true);
	return rc;
}

/* ---- interrupt, capabilities, metrics ------------------------------- */

int al_host_interrupt(al_host *h, const al_host_context *ctx,
		      const char *run_id, al_error **err)
{
	run_exec *x = NULL;
	al_handle_ref *ref = NULL;
	pthread_mutex_lock(&h->lock);
	for (live_run *lr = h->live; lr; lr = lr->next) {
		/* Another tenant's run is reported as no such run. */
		if (run_id && ctx && ctx->tenant &&
		    strcmp(lr->run_id, run_id) == 0 &&
		    strcmp(lr->tenant, ctx->tenant) == 0) {
			x = lr->x;
			pthread_mutex_lock(&x->lock);
			x->refs++;
			pthread_mutex_unlock(&x->lock);
			ref = x->ref;
			pthread_mutex_lock(&h->sel.lock);
			ref->users++;
			pthread_mutex_unlock(&h->sel.lock);
			break;
		}
	}
	pthread_mutex_unlock(&h->lock);
	if (!x)
		return al_error_set(err, AL_ERR_NOT_FOUND, ESRCH, "run_id",
				    "no such live run");
	al_cancel_fire(x->cancel, AL_CANCEL_INTERRUPTED);
	if (ref->ops->interrupt)
		(void)ref->ops->interrupt(ref->handle, x->run_id, NULL);
	al_selector_put(&h->sel, ref);
	run_exec_unref(x);
	return 0;
}

/* Drops the language facts the tenant may not use. */
static void restrict_languages(al_facts *f, const al_cfg_tenant *t)
{
	size_t w = 0;
	for (size_t i = 0; i < f->n_languages; i++) {
		al_language_fact *lf = &f->languages[i];
		if (al_cfg_tenant_allows_language(t, lf->language)) {
			f->languages[w++] = *lf;
		} else {
			free(lf->language);
			free(lf->toolchain);
			free(lf->version);
			free(lf->path);
		}
	}
	f->n_languages = w;
	/* The exec shape is gated like a language named "exec". */
	if (!al_cfg_tenant_allows_language(t, "exec"))
		f->exec = false;
}

int al_host_capabilities(al_host *h, const al_host_context *ctx,
			 al_facts ***out, size_t *n, al_error **err)
{
	const al_cfg_tenant *t =
		al_config_tenant(h->cfg, ctx ? ctx->tenant : NULL);
	*out = NULL;
	*n = 0;
	if (!t)
		return al_error_set(err, AL_ERR_NOT_FOUND, ENOENT, "tenant",
				    "unknown tenant");
	al_facts **arr = calloc(h->sel.n ? h->sel.n : 1, sizeof(al_facts *));
	if (!arr)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	for (size_t i = 0; i < h->sel.n; i++) {
		/* A provider the deployment has not acknowledged is not
		 * probed (its code does not run) and cannot be chosen. */
		bool acked = al_selector_acknowledged(&h->sel, i);
		al_facts *f = acked ? al_selector_probe(&h->sel, i) : NULL;
		if (!f) {
			f = al_facts_new(h->sel.cands[i].ops->id,
					 AL_SAFETY_DISABLED);
			if (f) {
				f->available = false;
				f->unavailable_reason = strdup(
					acked ? "probe_failed"
					      : "not_acknowledged");
				if (!f->unavailable_reason) {
					al_facts_free(f);
					f = NULL;
				}
			}
		}
		if (!f) {
			al_facts_array_free(arr, i);
			return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
					    "out of memory");
		}
		restrict_languages(f, t);
		/* The operations this tenant may be granted, where the
		 * provider shows the toolbelt; a tenant never granted it is
		 * not offered it.  A remote run's toolbelt is the back
		 * end's, with the back end's operations (docs/toolbelt.md). */
		if (f->toolbelt && !t->grant.toolbelt) {
			f->toolbelt = false;
			(void)al_toolbelt_facts_set_host_api(f, NULL, 0);
		}
		if (f->toolbelt && f->safety_class != AL_SAFETY_REMOTE &&
		    al_toolbelt_facts_set_host_api(f, t->grant.operations,
						   t->grant.n_operations) < 0) {
			al_facts_free(f);
			al_facts_array_free(arr, i);
			return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
					    "out of memory");
		}
		arr[i] = f;
	}
	*out = arr;
	*n = h->sel.n;
	return 0;
}

void al_facts_array_free(al_facts **facts, size_t n)
{
	if (!facts)
		return;
	for (size_t i = 0; i < n; i++)
		al_facts_free(facts[i]);
	free(facts);
}

char *al_host_metrics_text(al_host *h)
{
	unsigned in_use, waiters;
	al_slots_stats(h->slots, &in_use, &waiters);
	return al_metrics_render(h->metrics, in_use, waiters,
				 al_selector_quarantined(&h->sel));
}
