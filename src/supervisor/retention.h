/* Internal: retention of what runs leave (docs/workspaces.md,
 * "Retention").  A run's stored data — its run directory
 * (STATE_DIR/runs/<id>/: final result, output, records) and its artifact
 * store — goes as one, once the run is finished; the audit trail keeps
 * its records. */
#ifndef AL_SUPERVISOR_RETENTION_H
#define AL_SUPERVISOR_RETENTION_H

#include <stddef.h>
#include <stdint.h>

#include <airlock/error.h>

#include "child/artifacts.h"

/* Removes the stored data of runs finished more than older_than_ms ago
 * (a run directory dates from its final result, a store from its last
 * change), or, with run_ids, exactly those runs whatever their age.  A
 * live run — a locked store, a run directory without a final result or
 * locked while it is being finished — is left alone and counted live.
 * Counts runs (a run's directory and store count once when removed). */
int al_runs_forget(const char *state_dir, uint64_t older_than_ms,
		   char *const *run_ids, size_t n_run_ids,
		   al_forget_stats *stats, al_error **err);

#endif
