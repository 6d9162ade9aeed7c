/* The default place of a sandboxed run's directory; see runbase.h. */
#include "sandbox/runbase.h"

#include <stdlib.h>

#include "child/rundir.h"

const char *al_sb_run_base(const al_request *req)
{
	(void)req;
	if (getenv("AIRLOCK_RUN_BASE") != NULL || getenv("TMPDIR") != NULL)
		return NULL;
	return al_rundir_tmpfs_base();
}
