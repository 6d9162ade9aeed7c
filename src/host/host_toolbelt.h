/* Internal: the toolbelt of a run the host executes in its own process
 * (al_host_run: `airlock run`), served from STATE_DIR/toolbelt/<run id>/
 * for as long as the run lives (docs/toolbelt.md).  A durable run's is
 * served by its supervisor instead (supervisor/toolbelt.h). */
#ifndef AL_HOST_HOST_TOOLBELT_H
#define AL_HOST_HOST_TOOLBELT_H

#include <stdint.h>

#include <airlock/contract.h>

#include "supervisor/toolbelt.h"

typedef struct al_host_tb {
	al_toolbelt *tb;
	int dirfd;
	char *dir;
	char *tool_dir, *bin;
	char token[65];
} al_host_tb;

/* Serves the run's toolbelt.  ops_json: the granted operations'
 * definitions, or NULL.  0, or a negative errno (-ENOENT: airlock-tool is
 * not installed). */
int al_host_tb_start(al_host_tb *t, const char *state_dir, const char *run_id,
		     const al_request *req, const char *ops_json,
		     int64_t deadline_ms);
/* Stops serving; with res, applies the record (al_toolbelt_finish).
 * Removes the directory.  Safe on a zeroed or never started t. */
int al_host_tb_finish(al_host_tb *t, al_result *res);

#endif
