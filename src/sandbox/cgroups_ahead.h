/* Internal: a cold run's cgroups made ahead, and what it leaves
 * removed behind.
 *
 * A cold run made its cgroups (a directory in each hierarchy it uses: on
 * a hybrid machine the unified one, and memory, pids and cpuacct on v1)
 * and removed them afterwards on its own path, and the kernel allocates
 * and frees each controller's state there (a memory cgroup's most of
 * all).  A provider handle that serves more than one run keeps one set
 * made ahead by a helper thread instead, written with the limits the last
 * run asked for: a cold run takes it, writes its own limits when they
 * differ, and is placed in it as before; after the run (its usage read)
 * the set goes back to be removed by the helper, with the init still
 * exiting in it (reaped first) and the run's uid lock, and so does the
 * run's directory; the next run's directory is laid out ahead too.
 *
 * One helper thread per handle does all of it: started once a step's
 * sandbox is started (while the program runs, off the step's path), it
 * makes the next set, then stays, waiting, while steps that took a set
 * are running, removes what they give back as they give it, and leaves
 * when none is running and nothing is left to do.
 *
 * Each set serves exactly one run.  Nothing ran in it before, so its
 * counters (peak memory, OOM kills, CPU, pids.max hits) start at zero as
 * they did when the run made it, and a used set is never taken again.
 * A run that finds none ready makes its own, as before.
 *
 * A supervisor keeps none (al_sb_cg_ahead_settle): its runs' cgroups are
 * made beneath the durable run's own cgroup, which the daemon removes
 * with that run, so a set made for the next run would be removed under
 * it. */
#ifndef AL_SANDBOX_CGROUPS_AHEAD_H
#define AL_SANDBOX_CGROUPS_AHEAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "cgroup/cgroup.h"
#include "child/rundir.h"
#include "sandbox/userns.h"

/* The limits a set is written with: a step's memory and pids limits (as
 * requested: al_sb_cgrun_limit adds the defaults) and its socket bound. */
typedef struct al_sb_cg_limits {
	bool valid;
	unsigned bits; /* the request's set bits for memory and pids */
	uint64_t memory_bytes, pids, socket_bytes;
} al_sb_cg_limits;

/* A used set waiting for removal, and what the init that was in it holds
 * while it finishes exiting: its pidfd (-1: none) and the run's uid lock
 * (fd -1: none), given back once the init is reaped. */
typedef struct al_sb_cg_behind {
	al_sb_cgrun set;
	int init_pidfd;
	al_sb_uid uid;
} al_sb_cg_behind;

/* What a taken set holds already (al_sb_cg_ahead_take). */
typedef enum al_sb_cg_taken {
	AL_SB_CG_NONE = 0,  /* none was ready */
	AL_SB_CG_UNLIMITED, /* no limit written yet */
	AL_SB_CG_OTHER,	    /* written with other limits */
	AL_SB_CG_AS_WANTED, /* written with exactly these */
} al_sb_cg_taken;

typedef struct al_sb_cg_ahead {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* the helper, waiting for what steps give back */
	const al_sb_cgroups *cg; /* the handle's hierarchies */
	bool enabled;
	bool making;	/* the helper thread is in its loop */
	bool joinable;	/* maker is to be joined */
	pthread_t maker;
	bool have;	/* ready holds a set */
	al_sb_cgrun ready;
	al_sb_cg_limits ready_limits; /* written into ready */
	/* The last taker's limits: the next set is written with them, as
	 * steps of one handle mostly ask for the same. */
	al_sb_cg_limits last;
	unsigned in_flight; /* steps between take and give */
	al_sb_cg_behind *behind; /* used sets waiting for removal */
	size_t n_behind, cap_behind;
	al_rundir *dirs; /* run directories waiting for removal */
	size_t n_dirs, cap_dirs;
	/* The base the last cold run's directory was made in (NULL: none
	 * yet), and one laid out there ahead (al_sb_cg_ahead_take_dir). */
	char *dir_base;
	bool have_dir;
	al_rundir ready_dir;
	unsigned seq;
	unsigned long long taken, missed;
	/* Called by the helper, without the lock, once after each step that
	 * gave its set back (al_sb_cg_ahead_after_step). */
	void (*after_step)(void *ctx);
	void *after_ctx;
	bool stepped; /* a step gave its set back since the last call */
	bool once;    /* one set only, for the handle's first step */
} al_sb_cg_ahead;

/* enabled: whether sets are made ahead at all; cg must outlive a. */
void al_sb_cg_ahead_init(al_sb_cg_ahead *a, const al_sb_cgroups *cg,
			 bool enabled);
/* A handle that serves one run (al_sandbox_one_run): the helper makes
 * one set, for the first step that takes one, and no run directory
 * ahead; what steps give back is removed behind as before.  Before the
 * first refill. */
void al_sb_cg_ahead_once(al_sb_cg_ahead *a);
/* The set made ahead into *out (the caller owns it), and what it holds:
 * AL_SB_CG_AS_WANTED when it was written with exactly `want` (nothing is
 * left to write), else the caller writes its limits (al_sb_cgrun_limit
 * on an unlimited set, al_sb_cgrun_relimit over other ones, and the
 * socket bound); AL_SB_CG_NONE when none is ready.  Either way the step
 * is counted as running until it gives its set back (al_sb_cg_ahead_give,
 * also with an empty set when it made none): a helper stays for it. */
al_sb_cg_taken al_sb_cg_ahead_take(al_sb_cg_ahead *a, al_sb_cgrun *out,
				   const al_sb_cg_limits *want);
/* A run's cgroups once the run is over and its usage read: kept for the
 * next helper (or settle) to remove, or removed now when they cannot be
 * kept (not enabled, no memory).  init_pidfd (taken; -1: none): an init
 * that reported and is still exiting, reaped before the set is removed.
 * uid (NULL: none): the run's uid lock, taken along with a kept set and
 * given back once that init is reaped (left with the caller otherwise,
 * the init being reaped by then).  Takes the set; returns 0, or what
 * al_sb_cgrun_destroy returned when they were removed now. */
int al_sb_cg_ahead_give(al_sb_cg_ahead *a, al_sb_cgrun *run, int init_pidfd,
			al_sb_uid *uid);
/* Work the handle starts after each run (the next network namespace):
 * done by the helper once a step has given its set back, off the run's
 * path, while sets are made ahead (al_sb_cg_ahead_enabled); the caller
 * does it itself otherwise.  Set before the first step. */
void al_sb_cg_ahead_after_step(al_sb_cg_ahead *a, void (*fn)(void *ctx),
			       void *ctx);
/* Whether sets are made ahead (not disabled, not settled). */
bool al_sb_cg_ahead_enabled(al_sb_cg_ahead *a);
/* A run directory laid out ahead in base (under a hidden name, for
 * al_rundir_claim) into *out: true when one was ready.  Either way the
 * helper makes the next one there (a new base drops the one made in the
 * old).  base NULL: none is made or taken. */
bool al_sb_cg_ahead_take_dir(al_sb_cg_ahead *a, const char *base,
			     al_rundir *out);
/* A run's directory once the run is over: removed by the helper, or now
 * when it cannot be kept.  Takes rd; 0, or what al_rundir_remove
 * returned when removed now (a failure behind is logged). */
int al_sb_cg_ahead_give_dir(al_sb_cg_ahead *a, al_rundir *rd);
/* Starts a helper unless one is there: it makes the next set, removes
 * what was given back, and stays while steps are running (so a step's
 * give only wakes it); called once a step's sandbox is started, and
 * after a run. */
void al_sb_cg_ahead_refill(al_sb_cg_ahead *a);
/* A supervisor between runs: waits for a helper still running, removes
 * every set held now, and makes none from here on (see above). */
void al_sb_cg_ahead_settle(al_sb_cg_ahead *a);
/* Joins the helper and removes every set held. */
void al_sb_cg_ahead_clear(al_sb_cg_ahead *a);

/* The counts below, read under the lock. */
void al_sb_cg_ahead_counts(al_sb_cg_ahead *a, unsigned long long *taken,
			   unsigned long long *missed, bool *ready);

/* A sandbox provider handle's counts: cold steps that took a set made
 * ahead, and those that found none ready (both 0 where none is made);
 * *ready: whether a set is ready now (a finished helper is joined). */
struct al_provider_handle;
void al_sb_provider_cgroups_stats(struct al_provider_handle *h,
				  unsigned long long *taken,
				  unsigned long long *missed, bool *ready);

#endif
