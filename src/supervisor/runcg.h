/* Internal: the cgroup a durable run's supervisor lives in.
 *
 * The daemon creates one cgroup per run beneath its own cgroup in the
 * unified (v2) hierarchy, `airlock-run-<id>`, and starts the supervisor in
 * it; everything the run starts stays inside (the sandbox's own cgroups
 * are created beneath it).  cgroup.events says when the whole tree is
 * gone and cgroup.kill ends it, even after the supervisor itself died.
 * Without a usable v2 hierarchy (no permission, no cgroup2 mount) runs
 * have no cgroup and the daemon relies on the supervisor's identity. */
#ifndef AL_SUPERVISOR_RUNCG_H
#define AL_SUPERVISOR_RUNCG_H

#include <stdbool.h>

/* Our own cgroup directory in the unified hierarchy when children can be
 * made there; NULL (and 0) when not.  Caller frees. */
int al_runcg_base(char **out);
/* Creates BASE/airlock-run-<run_id>.<tag>, which must not exist yet
 * (-EEXIST); *dir (caller frees).  The tag (AL_RUNCG_TAG_LEN hex, from the
 * daemon's state directory) tells apart daemons that run under the same
 * id on one machine. */
#define AL_RUNCG_TAG_LEN 8
int al_runcg_create(const char *base, const char *run_id, const char *tag,
		    char **dir);
/* An idle supervisor's cgroup (docs/durability.md, "Idle supervisors"):
 * BASE/airlock-run-sup-<nonce>.<tag>, made when it is started, before
 * the run it will serve has an id; the run records it at hand-off. */
int al_runcg_create_idle(const char *base, const char *nonce, const char *tag,
			 char **dir);
/* true when dir is exactly the run's cgroup under the unified mount: the
 * run id's, or the idle one named by the run's nonce (a recorded path is
 * checked before it is ever written to). */
bool al_runcg_valid(const char *dir, const char *run_id, const char *nonce);
/* In an idle supervisor that ends without a run: moves the calling
 * process to the parent of its own idle cgroup, ends whatever is left in
 * it and removes it.  0, or negative errno; a process that is not in an
 * idle supervisor's cgroup touches nothing (-ENOENT). */
int al_runcg_leave_idle(void);
/* 1 when a process is left anywhere in the subtree, 0 when none (or the
 * cgroup is gone), negative errno when it cannot be told. */
int al_runcg_populated(const char *dir);
/* Kills every process in the subtree and waits (at most timeout_ms) until
 * none is left.  0 when the tree is verified gone, -ETIMEDOUT else. */
int al_runcg_kill_wait(const char *dir, int timeout_ms);
/* Removes the (empty) subtree, deepest first; 0, or negative errno. */
int al_runcg_remove(const char *dir);

#endif
