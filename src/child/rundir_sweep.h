/* Internal to src/child: the owner mark of a run directory and the sweep
 * of leftovers whose creator is gone (rundir_sweep.c).
 *
 * A process killed mid-run (SIGKILL of `airlock run`, of a supervisor)
 * never removes its run directory, and its name (the run id) does not
 * tell who made it.  So every run directory holds an owner mark,
 * RUN/.airlock-rundir: a file its creator holds an flock on from before
 * the directory appears under its name until after it is removed.  The
 * kernel drops the lock when the last descriptor of it closes: when the
 * creator (and any child forked before its exec) is gone, whatever its
 * pid namespace, and never because a pid was reused.  A sweep removes,
 * beneath a base directory, the run directories whose mark it can lock:
 * provably leftovers.  A durable run's run directory is its supervisor's
 * (the supervisor creates it), so it stays while that supervisor lives;
 * the daemon's recovery removes it by name (al_rundir_remove_leftover)
 * and finds nothing left to do when a sweep was first. */
#ifndef AL_CHILD_RUNDIR_SWEEP_H
#define AL_CHILD_RUNDIR_SWEEP_H

#include <stddef.h>

/* The owner mark, inside the run directory (never bound into a run). */
#define AL_RUNDIR_OWNER ".airlock-rundir"
/* Its content, written under the lock: a directory whose mark lacks it
 * was not made by al_rundir_owned_mkdir and is never swept. */
#define AL_RUNDIR_OWNER_MARK "airlock run directory: locked by its creator\n"
/* Names of directories being made (before the mark is in place) and
 * being swept, beneath the base. */
#define AL_RUNDIR_NEW_PREFIX ".airlock-new-"
#define AL_RUNDIR_GONE_PREFIX ".airlock-gone-"

/* Makes base_fd/run_id (0700) holding the owner mark, locked: made under
 * a hidden name, marked, then renamed into place, so no directory ever
 * answers under a run id without a held mark.  *owner_fd (close-on-exec)
 * holds the lock; closing it after the directory is removed releases it.
 * 0 or -errno (-EEXIST when run_id exists). */
int al_rundir_owned_mkdir(int base_fd, const char *run_id, int *owner_fd);
/* Its first half: the marked, locked directory under a fresh hidden name
 * (written into name, room for size), where it stays for its caller to
 * lay out and rename (al_rundir_claim).  0 or -errno. */
int al_rundir_owned_mkdir_hidden(int base_fd, char *name, size_t size,
				 int *owner_fd);

/* A fresh hidden name for a run directory being removed (pid and a
 * sequence): 0, or -ENAMETOOLONG when it does not fit in size. */
int al_rundir_gone_name(char *buf, size_t size);

/* Sweeps base_fd (a private base directory of ours) now: removes every
 * run directory whose mark is locked by nobody, and the hidden
 * directories (made or swept by a process that died on the way) older
 * than a minute.  Returns how many were removed. */
int al_rundir_sweep_at(int base_fd);

/* al_rundir_sweep_at, rate-limited: the first time this process sees
 * that base, then at most once a minute. */
void al_rundir_sweep_maybe(int base_fd);

#endif
