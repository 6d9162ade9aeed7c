/* Internal: what a result says about how its run ran (docs/contract.md,
 * "Result"): the workspace it used, the wall limit it ran under and the
 * id of its log artifact.  Providers fill it once their program ran. */
#ifndef AL_PROC_RUN_REPORT_H
#define AL_PROC_RUN_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include <airlock/contract.h>

typedef struct al_run_report {
	const char *where;    /* "tmpfs at /workspace", "directory on the host" */
	uint64_t ws_bytes;    /* the workspace's bound; 0: none */
	int store_dirfd;      /* the run's artifact store, or -1 */
} al_run_report;

/* Sets res->workspace_* ("scratch": a private directory made for this
 * run and removed after it), res->timeout_ms and res->log_artifact (when
 * the store holds a "log").  Only when the program ran.  0 or -ENOMEM. */
int al_run_report_fill(al_result *res, const al_request *req,
		       const al_run_report *rep);

#endif
