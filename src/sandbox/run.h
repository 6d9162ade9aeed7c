/* Internal: one step (build or run) of a request inside a fresh sandbox. */
#ifndef AL_SANDBOX_RUN_H
#define AL_SANDBOX_RUN_H

#include <stdbool.h>
#include <sys/types.h>

#include <airlock/provider.h>

#include "proc/rundir.h"
#include "sandbox/context.h"

typedef struct al_sb_step {
	const al_sb_context *ctx;
	uid_t uid; /* the run's host uid (and gid) */
	const al_rundir *rd;
	char *const *extra_roots;
	char *const *argv;
	char *const *envp;
	const al_exec *exec;
	bool with_stdin;
	bool build;	     /* /build writable (TypeScript transpile) */
	bool has_build_dir;  /* mount RUN/tmp at /build */
	const char *cg_name; /* unique cgroup name for this step */
} al_sb_step;

/* true when /workspace is a tmpfs of limits.workspace_bytes filled with
 * the input files inside the sandbox (nothing of it on the host), rather
 * than a bind of RUN/workspace. */
bool al_sb_workspace_bounded(const al_request *req);

/* Fills res with the step's outcome (unavailable when the sandbox could
 * not be set up).  Returns 0, or a negative errno for a provider bug or a
 * cgroup that could not be removed (res still holds the outcome). */
int al_sb_run_step(const al_sb_step *s, al_result *res, al_error **err);

#endif
