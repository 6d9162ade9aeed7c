/* Internal: idempotency keys (pipeline step 7). */
#ifndef AL_HOST_IDEMPOTENCY_H
#define AL_HOST_IDEMPOTENCY_H

#include "host/db.h"

typedef struct al_idem al_idem;

enum {
	AL_IDEM_CLAIMED = 0, /* run it, then call al_idem_finish */
	AL_IDEM_STORED = 1,  /* *result_json is the stored result */
	AL_IDEM_CONFLICT = 2 /* the key belongs to a different request */
};

al_idem *al_idem_new(al_db *db, uint64_t retention_s);
void al_idem_free(al_idem *idem);
/* Claims (tenant, key) for the request whose canonical hash is req_hash.
 * While another caller holds the same claim for the same request this
 * waits for its result.  Returns AL_IDEM_* or a negative errno. */
int al_idem_claim(al_idem *idem, const char *tenant, const char *key,
		  const char *req_hash, char **result_json, al_error **err);
/* Ends a claim: result_json is stored (and handed to waiters), or NULL
 * when nothing ran and a retry should run (waiters then claim afresh). */
void al_idem_finish(al_idem *idem, const char *tenant, const char *key,
		    const char *req_hash, const char *result_json);

/* 1 when a stored result names run_id (a run id once used), 0 when none,
 * <0 on error. */
int al_idem_names_run(al_idem *idem, const char *run_id);
/* Removes every stored result naming run_id ("runs forget"): 0 or <0. */
int al_idem_forget_run(al_db *db, const char *run_id);

#endif
