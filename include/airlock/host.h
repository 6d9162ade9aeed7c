/* airlock — the host pipeline (docs/host.md).
 *
 * The host decides whether a run may happen: validate, enabled, language
 * allow-list, grant, ceilings, provider selection, idempotency, audit,
 * concurrency slot — then executes on the selected provider, waits at most
 * wall + grace, caps output, checks the result's shape and audits the end.
 * The CLI and the daemon both run every request through it.
 */
#ifndef AIRLOCK_HOST_H
#define AIRLOCK_HOST_H

#include <airlock/contract.h>
#include <airlock/error.h>
#include <airlock/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct al_config al_config; /* parsed configuration file */
typedef struct al_host al_host;

/* Loads and validates a configuration file (docs/configuration.md).  A bad
 * file fails with AL_ERR_INVALID_CONFIG whose reason names the key path,
 * never its value. */
int al_config_load(const char *path, al_config **out, al_error **err);
int al_config_parse(const char *json, size_t len, al_config **out,
		    al_error **err);
/* The configuration used when no file is given: execution enabled, the
 * candidates ["sandbox"], tenant "default" with every language, grant
 * every network mode (providers still offer only what they enforce), every
 * workspace mode, no secrets. */
int al_config_default(al_config **out, al_error **err);
void al_config_free(al_config *cfg);

/* Who asks.  Supplied by the caller (CLI user, API token), never by the
 * request body. */
typedef struct al_host_context {
	const char *tenant;    /* must name a configured tenant */
	const char *principal; /* free-form, audited; may be NULL */
} al_host_context;

typedef struct al_host_options {
	const char *state_dir; /* database, run directories */
	/* Overrides the configuration's candidate list with exactly this
	 * provider (CLI -p).  The trusted local provider still needs the
	 * acknowledgement (the CLI's explicit -p local counts as one). */
	const char *force_provider;
	bool force_acknowledges_trusted;
	/* Extra providers (third-party, tests), NULL-terminated; looked up
	 * by id before the built-ins.  May be NULL. */
	const al_provider_ops *const *providers;
} al_host_options;

int al_host_new(const al_config *cfg, const al_host_options *opts,
		al_host **out, al_error **err);
void al_host_free(al_host *host);

typedef struct al_run_options {
	al_output_fn on_output; /* live output, when the grant streams */
	void *on_output_ctx;
	al_cancel *cancel;	/* may be NULL */
	/* Called once the run id is known (before execution). */
	void (*on_run_id)(void *ctx, const char *run_id);
	void *on_run_id_ctx;
} al_run_options;

/* Runs one request through the whole pipeline.  Always yields a result
 * (refusals included) in *out and returns 0; a negative errno only when
 * not even a result could be produced (allocation failure). */
int al_host_run(al_host *host, const al_host_context *ctx,
		const al_request *req, const al_run_options *opts,
		al_result **out);
/* Same, from the request's JSON text: a malformed body becomes an
 * invalid_request result (audited as a denial). */
int al_host_run_json(al_host *host, const al_host_context *ctx,
		     const char *json, size_t len, const al_run_options *opts,
		     al_result **out);
/* Interrupts a live run of this tenant.  -ESRCH when no such live run. */
int al_host_interrupt(al_host *host, const al_host_context *ctx,
		      const char *run_id, al_error **err);
/* Probes every configured candidate; *out is an array of *n facts. */
int al_host_capabilities(al_host *host, const al_host_context *ctx,
			 al_facts ***out, size_t *n, al_error **err);
void al_facts_array_free(al_facts **facts, size_t n);

/* Audit trail (SQLite, hash-chained; docs/audit.md). */
int al_audit_verify(const char *state_dir, size_t *records, al_error **err);
/* The last n audit records, oldest first, one JSON object per line (each
 * with its "hash" and "prev_hash"); caller frees *json_lines_out. */
int al_audit_tail(const char *state_dir, size_t n, char **json_lines_out,
		  al_error **err);

/* The host's metrics in Prometheus text format (runs by outcome, provider
 * and language; duration histogram; slots in use; slot waiters; audit
 * write failures; quarantined handles).  Caller frees; NULL on allocation
 * failure. */
char *al_host_metrics_text(al_host *host);

#ifdef __cplusplus
}
#endif
#endif
