/* Internal: provider selection (pipeline step 6) and the ensured-handle
 * cache. */
#ifndef AL_HOST_SELECT_H
#define AL_HOST_SELECT_H

#include <pthread.h>

#include <jansson.h>

#include "host/config.h"

/* Why a candidate was passed over; the tokens are documented in
 * docs/host.md and appear in the audit record's "selection". */
typedef enum al_skip_kind {
	AL_SKIP_UNAVAILABLE = 0,
	AL_SKIP_TRUSTED_NOT_ACKNOWLEDGED,
	AL_SKIP_ISOLATION_REQUIRED,
	AL_SKIP_LANGUAGE_ABSENT,
	AL_SKIP_VERSION_INELIGIBLE,
	AL_SKIP_CAPABILITY_INELIGIBLE,
	AL_SKIP_NOT_ACKNOWLEDGED
} al_skip_kind;

const char *al_skip_name(al_skip_kind k);

typedef struct al_skip {
	char provider[65];
	al_skip_kind kind;
	char detail[96]; /* limit name, "network", a toolchain id, ... */
} al_skip;

/* One ensured handle of a candidate, shared by concurrent runs. */
typedef struct al_handle_ref {
	const al_provider_ops *ops;
	size_t cand; /* the selector's candidate it belongs to */
	al_provider_handle *handle;
	unsigned users;
	bool retired;	  /* replaced: released once unused */
	bool quarantined; /* its release failed: never used again */
	struct al_handle_ref *next;
} al_handle_ref;

typedef struct al_candidate_rt {
	const al_cfg_candidate *cfg;
	const al_provider_ops *ops;
	pthread_mutex_t ensure_lock; /* one ensure at a time per candidate */
	al_handle_ref *current;
	/* airlock's own sandbox (or disabled): isolation the host built */
	bool own;
	/* the deployment took it on its word: listed in
	 * acknowledged_providers, or forced by the CLI's -p (not a module) */
	bool acknowledged;
	bool module; /* loaded from the configuration's "module" */
	/* an unacknowledged module's stand-in: its name only, not loaded */
	al_provider_ops *stub;
	/* a handle's release failed: unavailable until a probe succeeds
	 * (guarded by the selector's lock) */
	bool quarantined;
} al_candidate_rt;

typedef struct al_selector {
	al_candidate_rt *cands;
	size_t n;
	bool trusted_acknowledged;
	pthread_mutex_t lock; /* handle refs */
	al_handle_ref *refs;  /* every handle ever ensured */
} al_selector;

/* extra: NULL-terminated providers looked up before the built-ins.
 * force: use only this provider (it need not be a configured candidate). */
int al_selector_init(al_selector *s, const al_config *cfg,
		     const al_provider_ops *const *extra, const char *force,
		     bool force_acknowledges, al_error **err);
/* Releases every idle handle (a failed release quarantines it). */
void al_selector_destroy(al_selector *s);

typedef struct al_selection {
	al_skip *skips;
	size_t n_skips;
	size_t chosen; /* index into the selector's candidates */
	al_facts *facts;     /* the chosen candidate's facts (owned) */
	al_handle_ref *ref;  /* held; give back with al_selector_put */
	al_outcome outcome;  /* when nothing was chosen */
	char reason[96];
} al_selection;

/* Returns 0 with sel->ref set (a candidate was chosen and its handle is
 * held), or 1 with sel->outcome/reason the refusal.  Negative errno only
 * on allocation failure.  soft: AL_LIMIT_* bits whose values come from a
 * built-in ceiling — a candidate that does not enforce one of them is not
 * passed over for it (the host then drops that limit for it). */
int al_select(al_selector *s, const al_request *req, unsigned soft,
	      al_selection *sel);
/* false when candidate i may not run code until the deployment
 * acknowledges it: not airlock's own sandbox (or disabled, or the
 * built-in local, whose acknowledgement is the trusted_local one), and
 * not listed in acknowledged_providers nor forced by the CLI. */
bool al_selector_acknowledged(const al_selector *s, size_t i);
void al_selection_clear(al_selection *sel);
void al_selector_put(al_selector *s, al_handle_ref *ref);
/* Skip records as a JSON array for the audit record. */
json_t *al_selection_json(const al_selection *sel);
/* Handles whose release failed. */
unsigned al_selector_quarantined(al_selector *s);
/* A candidate's facts now (capabilities); NULL when the probe failed. */
al_facts *al_selector_probe(al_selector *s, size_t i);

#endif
