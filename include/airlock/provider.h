/* airlock — the provider contract.
 *
 * A provider is a table of functions.  The host probes it (facts it
 * observed now), ensures a handle (one handle serves concurrent runs and
 * must be thread-safe), executes validated requests on it, may interrupt a
 * run by id, and releases the handle.  A provider never sees tenant identity
 * and never receives a host path to read code from.
 */
#ifndef AIRLOCK_PROVIDER_H
#define AIRLOCK_PROVIDER_H

#include <airlock/contract.h>
#include <airlock/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- cancel token ----------------------------------------------------
 * Fired by the caller (cancel: the caller gave up) or by an interrupt call
 * (interrupt: an operator stopped the run).  Providers poll al_cancel_fd()
 * (readable once fired) or call al_cancel_state(). */

typedef struct al_cancel al_cancel;

typedef enum al_cancel_kind {
	AL_CANCEL_NONE = 0,
	AL_CANCEL_CANCELLED,  /* -> outcome cancelled */
	AL_CANCEL_INTERRUPTED /* -> outcome interrupted */
} al_cancel_kind;

al_cancel *al_cancel_new(void);
void al_cancel_free(al_cancel *c);
/* The first fire wins; later fires are ignored.  Thread- and
 * async-signal-safe. */
void al_cancel_fire(al_cancel *c, al_cancel_kind kind);
al_cancel_kind al_cancel_state(const al_cancel *c);
int al_cancel_fd(const al_cancel *c);

/* ---- output sink ----------------------------------------------------
 * Called from the executing thread as output arrives (stream is AL_STDOUT
 * or AL_STDERR), before any cap, when the grant allows streaming.  It must
 * not block for long. */
typedef void (*al_output_fn)(void *ctx, int stream, const unsigned char *data,
			     size_t len);

/* ---- one execution --------------------------------------------------- */

typedef struct al_exec {
	const char *run_id;
	const al_request *request; /* validated; limits have defaults applied */
	al_output_fn on_output;	   /* may be NULL */
	void *on_output_ctx;
	al_cancel *cancel;	   /* never NULL */
	/* Extra environment the host resolved for this run (named secrets),
	 * "NAME=value" strings; never logged. */
	const char *const *host_env;
	size_t n_host_env;
	/* The run's inbox on the host (airlockd runs; docs/durability.md),
	 * or NULL: a directory of delivered events the program may read,
	 * and one where it acknowledges them by creating a file named after
	 * the event id.  A provider that runs programs shows both to the
	 * program and names them in AIRLOCK_INBOX / AIRLOCK_INBOX_ACKS. */
	const char *inbox_dir;
	const char *inbox_acks_dir;
} al_exec;

/* ---- operations table ------------------------------------------------ */

typedef struct al_provider_handle al_provider_handle; /* provider-defined */

typedef struct al_provider_ops {
	const char *id;
	/* Observe facts now.  config_json is the candidate's config object
	 * (or NULL).  Never fails for "not available": that is a fact. */
	int (*probe)(const char *config_json, al_facts **facts, al_error **err);
	int (*ensure)(const char *config_json, al_provider_handle **handle,
		      al_error **err);
	int (*health)(al_provider_handle *handle, al_error **err);
	/* Fills res (allocated by the caller) with exactly one outcome.
	 * Returns 0 whenever res holds an outcome, including refusals like
	 * unsupported_language; a negative errno only for a provider bug. */
	int (*execute)(al_provider_handle *handle, const al_exec *exec,
		       al_result *res, al_error **err);
	/* Interrupts a live run of this handle (TERM, grace, KILL); its
	 * execute then reports `interrupted`.  -ESRCH if unknown. */
	int (*interrupt)(al_provider_handle *handle, const char *run_id,
			 al_error **err);
	/* A failure is visible: the host quarantines the handle. */
	int (*release)(al_provider_handle *handle, al_error **err);
} al_provider_ops;

/* Built-in providers: "disabled", "local", "sandbox", "remote" (as built).
 * NULL when unknown. */
const al_provider_ops *al_provider_lookup(const char *id);
/* NULL-terminated list of the built-in providers, safest first. */
const al_provider_ops *const *al_provider_builtins(void);

#ifdef __cplusplus
}
#endif
#endif
