/* Internal: the host pipeline in two halves, for the daemon's durable runs
 * (docs/durability.md).
 *
 * al_host_admit_json runs steps 1–9 and resolves the secrets; the caller
 * executes the admitted request elsewhere (a supervisor process) and hands
 * the raw result to al_host_finish (step 11: caps, shape, run.finished,
 * idempotent store, metrics).  al_host_resume rebuilds an admission from
 * what a run persisted, so a restarted daemon can finish a run an earlier
 * process admitted.  al_host_run (the CLI) keeps the whole pipeline in one
 * call. */
#ifndef AL_HOST_ADMISSION_H
#define AL_HOST_ADMISSION_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <airlock/host.h>

typedef struct al_admission al_admission;

/* Steps 1–9 and the secrets.  Returns 0 with exactly one of:
 *  - *adm: admitted — run.started is audited, a slot and the idempotency
 *    claim are held.  opts->on_run_id is NOT called: the caller announces
 *    the id once it has persisted the run.  End it with al_host_finish.
 *  - *out: the request ended here (a refusal or an idempotent replay),
 *    audited, counted and announced, exactly as al_host_run_json would.
 * A negative errno only on allocation failure. */
int al_host_admit_json(al_host *h, const al_host_context *ctx,
		       const char *json, size_t len,
		       const al_run_options *opts, al_admission **adm,
		       al_result **out);

/* What the caller of an admission adds (airlockd: from request headers,
 * docs/api.md).  All optional. */
typedef struct al_admit_options {
	/* The run id the caller chose (X-Airlock-Run-Id): accepted only
	 * when it is a canonical lower-case UUID (else invalid_request,
	 * reason run_id) and claim_run_id says it is free (else conflict,
	 * reason run_id_in_use).  A refusal then carries a new id. */
	const char *run_id;
	/* Reserves the id atomically: 0 when free (now taken), -EEXIST when
	 * in use.  Called once, after the request validated. */
	int (*claim_run_id)(void *ctx, const char *run_id);
	void *claim_ctx;
	/* X-Airlock-Forwarded-Env as received (host/forwarded_env.h): only
	 * a tenant with accept_forwarded_env takes it (else denied,
	 * gate:forwarded_env); malformed: invalid_request, forwarded_env.
	 * Its variables reach the program like resolved secrets; a granted
	 * secret it names is not read from this host's store. */
	const char *forwarded_env;
	/* The caller's W3C traceparent (airlockd checked its form): recorded
	 * in run.started so that the run joins the caller's trace. */
	const char *traceparent;
	/* The request's "continues" (docs/durability.md, "Carry-over"):
	 * 0 when this tenant may continue that run, -ENOENT when there is no
	 * such run or it is another tenant's, -EBUSY when it has not
	 * finished, -EALREADY when it was continued before.  NULL: this host
	 * keeps no durable runs, and a request naming one is refused
	 * (denied, continues:unsupported). */
	int (*check_continues)(void *ctx, const char *tenant,
			       const char *run_id);
	void *continues_ctx;
} al_admit_options;

/* al_host_admit_json with admission options (NULL: none). */
int al_host_admit_json_ex(al_host *h, const al_host_context *ctx,
			  const char *json, size_t len,
			  const al_run_options *opts,
			  const al_admit_options *aopts, al_admission **adm,
			  al_result **out);

const char *al_admission_run_id(const al_admission *a);
const char *al_admission_tenant(const al_admission *a);
const char *al_admission_principal(const al_admission *a); /* may be NULL */
const al_request *al_admission_request(const al_admission *a);
/* The canonical request JSON (what the supervisor executes). */
const char *al_admission_request_json(const al_admission *a);
const char *al_admission_provider(const al_admission *a);
/* The definitions of the host operations the request is granted
 * (host/operations.h), compact JSON text in *out (caller frees), or NULL
 * when it is granted none. */
int al_admission_operations(const al_admission *a, char **out);
/* The selected candidate's configuration object text, or NULL. */
const char *al_admission_provider_config(const al_admission *a);
const al_facts *al_admission_facts(const al_admission *a);
/* The selected candidate's module path (a provider module), or NULL. */
const char *al_admission_provider_module(const al_admission *a);
/* The resolved secrets ("NAME=value"); wiped when the admission ends. */
const char *const *al_admission_host_env(const al_admission *a, size_t *n);
/* How long past wall_ms the host waits before it calls a run overdue. */
uint64_t al_admission_grace_ms(const al_admission *a);
/* The run's build cache bound (0: none, or not a compiled language),
 * whether it is shared across tenants, how many judged cases may run at
 * once (the slots held), and how long the provider may take before its
 * grace (al_judge_budget_ms). */
void al_admission_build(const al_admission *a, uint64_t *cache_bytes,
			bool *shared, unsigned *parallel, uint64_t *budget_ms);
/* When the request was received (Unix ms). */
int64_t al_admission_admitted_ms(const al_admission *a);

/* What a durable run persisted before its launch. */
typedef struct al_resume_info {
	const char *run_id;
	const char *tenant;
	const char *principal;	  /* may be NULL */
	const char *request_json; /* canonical */
	const char *provider;
	const char *facts_json;	  /* may be NULL */
	int64_t admitted_ms;
} al_resume_info;

/* An admission for a run an earlier process admitted: no new audit
 * record; a slot is taken if one is free (the run is already running, so
 * it is never refused for lack of one); the idempotency key is claimed so
 * a duplicate waits for this run's result. */
int al_host_resume(al_host *h, const al_resume_info *info,
		   al_admission **adm, al_error **err);

typedef struct al_finish_options {
	/* res NULL: the run ends as `unavailable` with this reason
	 * (default "lost"). */
	const char *refusal;
	/* A process may have run (a supervisor was launched): the result
	 * is kept for the idempotency key, so a retry never runs it twice. */
	bool launched;
	/* res is the final result another process already recorded (its
	 * audit and store done): taken as it is. */
	bool as_final;
	/* run.finished is already in the audit trail. */
	bool skip_audit;
	/* res was read from a record its process synced where recovery
	 * finds it (a durable run's result.json): with the configuration's
	 * "auto", run.finished is then committed without a sync of its own
	 * (docs/configuration.md, "audit"). */
	bool result_durable;
	/* When run.finished cannot be written (a full disk): called before
	 * each retry with the attempt (0 first); 0 retries, negative gives
	 * up (the run is finished without it).  NULL: no retry. */
	int (*audit_retry)(void *ctx, unsigned attempt);
	void *audit_retry_ctx;
} al_finish_options;

/* Step 11 for a result produced elsewhere; takes res (may be NULL) and
 * adm.  *out is the final result.  Negative errno on allocation failure
 * (adm is released all the same). */
int al_host_finish(al_host *h, al_admission *adm, al_result *res,
		   const al_finish_options *o, al_result **out);
/* Releases an admission without finishing it (nothing ran, nothing is
 * audited; the slot and the claim are given back). */
void al_admission_free(al_admission *adm);

/* 1 when the audit trail holds `event` for run_id, 0 when not, negative
 * errno when it cannot be read. */
int al_host_audit_has(al_host *h, const char *run_id, const char *event);
/* Recovery (docs/durability.md): the run.started records that have no
 * run.finished, as a JSON array (caller decrefs), searched from the mark
 * `from` (the text "<seq> <hash>" a previous search returned as *head,
 * or NULL); *head (caller frees): where the next search may begin. */
int al_host_audit_open_starts(al_host *h, const char *from, json_t **starts,
			      char **head, al_error **err);
/* Appends a record the service made (e.g. "callback.delivered") to the
 * audit chain; record gets seq and time.  0 or negative errno. */
int al_host_audit_event(al_host *h, json_t *record, al_error **err);
/* Closes one of them with a run.finished of this outcome and reason;
 * detail says why the daemon made it. */
int al_host_audit_close_start(al_host *h, const json_t *start,
			      const char *outcome, const char *reason,
			      const char *detail, al_error **err);

#endif
