/* Internal: where a sandboxed run's directory goes by default.
 *
 * A run's directory (RUN/code, RUN/workspace, RUN/tmp) lives for one run
 * and is removed after it.  Creating and removing it on ext4 is a
 * measurable part of a run, on a tmpfs much less (docs/performance.md).
 * So it goes to /dev/shm/airlock-<euid> when /dev/shm
 * is a root-owned sticky tmpfs and nothing chose a place (the provider's
 * run_dir, AIRLOCK_RUN_BASE, TMPDIR win).  Nothing the program writes
 * lands there: a rw /workspace is a tmpfs of its own (run.h), and the
 * directory holds only what the host wrote (the code, a read-only
 * workspace's inputs, a build step's output). */
#ifndef AL_SANDBOX_RUNBASE_H
#define AL_SANDBOX_RUNBASE_H

#include <airlock/contract.h>

/* The base for req's run directory, or NULL for al_rundir_create's own
 * default.  The string is static. */
const char *al_sb_run_base(const al_request *req);

#endif
