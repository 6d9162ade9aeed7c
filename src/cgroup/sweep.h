/* Internal to src/cgroup: waiting for a run's dying tree before its
 * cgroups are removed, the cgroups that still could not be, and the sweep
 * of empty leftovers whose creator is gone (sweep.c). */
#ifndef AL_CGROUP_SWEEP_H
#define AL_CGROUP_SWEEP_H

#include "cgroup/cgroup.h"

/* Kills the run's cgroups (again every so often) and waits until they are
 * empty, at most timeout_ms; waits on the unified cgroup.events where
 * there is one.  true when verified empty. */
bool al_sb_cgrun_settle(const al_sb_cgrun *run, int timeout_ms);
/* A run cgroup that could not be removed: retried (one rmdir, no wait) at
 * every later removal in this process. */
void al_cg_sweep_defer(const char *dir);
/* After a removal: retries the handed-over dirs and, once per process and
 * then at most once a minute, sweeps the hierarchies the run's cgroups
 * were made in (their parents, our own cgroups): every empty
 * "airlock-PID-..." or "airlock-probe-PID-..." cgroup there whose
 * creator PID is gone, older than a minute, is removed.  Only rmdir: the
 * kernel refuses a cgroup that holds a process or a child, so nothing
 * alive is touched; a durable run's "airlock-run-..." is its daemon's and
 * never swept.  Returns how many were removed. */
int al_cg_sweep_after(const al_sb_cgrun *run);

#endif
