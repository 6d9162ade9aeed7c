/* Internal: the warm pools of one sandbox provider handle — per language,
 * up to `size` members (warm.h) made ahead by a background thread, each
 * taken by one run and destroyed after it.  See docs/sandbox.md, "Warm
 * pools". */
#ifndef AL_SANDBOX_POOL_H
#define AL_SANDBOX_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include <airlock/provider.h>

#include "sandbox/context.h"
#include "sandbox/sandbox.h"
#include "sandbox/warm.h"

typedef struct al_sb_pool al_sb_pool;

typedef struct al_sb_pool_stats {
	uint64_t prepared; /* members started */
	uint64_t failed;   /* members that could not be started */
	uint64_t taken;	   /* runs served by a member */
	uint64_t cold;	   /* runs of a pooled language that went cold */
	uint64_t idle;	   /* members ready now */
} al_sb_pool_stats;

/* Starts the refill thread when the config has a pool (else *out is NULL
 * and nothing runs).  Never waits for a member.  ctx must outlive it. */
int al_sb_pool_start(const al_sb_context *ctx, al_sb_pool **out,
		     al_error **err);
/* A member able to serve exec (tc_path: the interpreter the run would
 * use), waiting for one being prepared when none is ready; NULL: run
 * cold.  A member taken must go back through al_sb_pool_done. */
al_sb_member *al_sb_pool_take(al_sb_pool *p, const al_exec *exec,
			      const char *tc_path);
/* The run of a taken member is over (the member itself is gone): the
 * pool may make a new one. */
void al_sb_pool_done(al_sb_pool *p, const char *language);
void al_sb_pool_get_stats(al_sb_pool *p, al_sb_pool_stats *out);
/* Between two runs of a supervisor that serves several (docs/durability.md,
 * "A supervisor that serves several runs"): every member a run used is
 * made again, refill or not, and this waits, at most timeout_ms, until
 * each language has all its members ready and none being prepared.  0;
 * -ENOENT without a pool; -EBUSY while a run holds a member; -EIO when
 * one could not be made; -ETIMEDOUT; -ESHUTDOWN. */
int al_sb_pool_renew(al_sb_pool *p, int timeout_ms);
/* The names (last path component) of the ready members' unified cgroups,
 * at most max; how many were written. */
#define AL_SB_CG_NAME_MAX AL_SANDBOX_CG_NAME_MAX
size_t al_sb_pool_cgroups(al_sb_pool *p, char (*names)[AL_SB_CG_NAME_MAX],
			  size_t max);
/* Stops the thread and destroys the idle members.  NULL is fine.
 * 0, or -EBUSY when something of a member could not be removed. */
int al_sb_pool_stop(al_sb_pool *p);

/* The pool counters of a sandbox provider handle (all 0 without a pool);
 * provider.c. */
void al_sb_provider_pool_stats(al_provider_handle *h, al_sb_pool_stats *out);

#endif
