/* A cold run's cgroups made ahead, and what it leaves removed behind
 * (see cgroups_ahead.h). */
#include "sandbox/cgroups_ahead.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child/supervise.h"
#include "core/log.h"

static void remove_set(al_sb_cgrun *run)
{
	/* al_sb_cgrun_destroy waits for a tree still dying and hands what
	 * stays to the sweep; only the operator's log can hear of it now,
	 * the run having answered */
	if (al_sb_cgrun_destroy(run) < 0)
		al_logf(AL_LOG_WARN, NULL,
			"sandbox: a run's cgroups could not be removed yet; "
			"the sweep retries them");
}

/* A used set, once the init that was in it (if any) is reaped; then
 * the uid that init ran as is free again. */
static void remove_behind(al_sb_cg_behind *b)
{
	al_child_reap(b->init_pidfd);
	b->init_pidfd = -1;
	remove_set(&b->set);
	al_sb_uid_give(&b->uid);
}

static void remove_dir(al_rundir *rd)
{
	/* what stays is its creator's no more: the sweep removes it */
	if (al_rundir_remove(rd) < 0)
		al_logf(AL_LOG_WARN, NULL,
			"sandbox: a run directory could not be removed; "
			"the sweep retries it");
}

static bool set_empty(const al_sb_cgrun *run)
{
	if (run->v2_dir != NULL)
		return false;
	for (int i = 0; i < AL_CG__N; i++)
		if (run->v1_dir[i] != NULL)
			return false;
	return true;
}

/* Appends one item to a growable array; false without memory. */
static bool grow(void **items, size_t *n, size_t *cap, size_t size)
{
	if (*n < *cap)
		return true;
	size_t want = *cap ? *cap * 2 : 4;
	void *grown = realloc(*items, want * size);
	if (grown == NULL)
		return false;
	*items = grown;
	*cap = want;
	return true;
}

/* The next set, made and limited without the lock (the helper's own
 * name and the last taker's limits, copied under it). */
static bool make_set(const al_sb_cgroups *cg, const char *name,
		     const al_sb_cg_limits *limits, al_sb_cgrun *set,
		     bool *limited)
{
	*limited = false;
	if (al_sb_cgrun_make(cg, name, set, NULL) < 0)
		return false;
	if (limits->valid) {
		al_limits l = {.set = limits->bits,
			       .memory_bytes = limits->memory_bytes,
			       .pids = limits->pids};
		/* a failed write leaves the set for its taker to write */
		*limited = al_sb_cgrun_limit(cg, set, &l) == 0 &&
			   al_sb_cgrun_limit_sockets(cg, set,
						     limits->socket_bytes) == 0;
	}
	/* the files its taker reads after the run, opened here, off the
	 * run's path (a failure leaves them to be read by path) */
	(void)al_sb_cgrun_keep_reads(set);
	return true;
}

/* Under the lock: makes the next set when none is ready, publishing it
 * under the lock again.  false when making failed (not tried again by
 * this helper: a hierarchy that refuses now would refuse in a loop). */
static bool helper_make(al_sb_cg_ahead *a)
{
	char tag[24], name[64];
	snprintf(tag, sizeof(tag), "a%u", a->seq++);
	al_sb_cgrun_name(name, sizeof(name), tag);
	al_sb_cg_limits limits = a->last;
	pthread_mutex_unlock(&a->lock);
	al_sb_cgrun set;
	bool limited = false;
	bool made = make_set(a->cg, name, &limits, &set, &limited);
	pthread_mutex_lock(&a->lock);
	if (!made)
		return false;
	if (a->have || !a->enabled) {
		/* a settle came meanwhile: not wanted any more */
		pthread_mutex_unlock(&a->lock);
		remove_set(&set);
		pthread_mutex_lock(&a->lock);
		return true;
	}
	a->ready = set;
	a->have = true;
	a->ready_limits = limits;
	/* written only in part: the taker writes all again */
	a->ready_limits.valid = limited;
	return true;
}

/* Under the lock: lays out the next run directory in the last base,
 * publishing it under the lock again.  false when that failed (not
 * tried again by this helper). */
static bool helper_make_dir(al_sb_cg_ahead *a)
{
	char *base = strdup(a->dir_base);
	if (base == NULL)
		return false;
	pthread_mutex_unlock(&a->lock);
	al_rundir rd;
	bool made = al_rundir_make(base, &rd, NULL) == 0;
	pthread_mutex_lock(&a->lock);
	if (!made) {
		free(base);
		return false;
	}
	if (!a->have_dir && a->enabled && a->dir_base != NULL &&
	    strcmp(a->dir_base, base) == 0) {
		a->ready_dir = rd;
		a->have_dir = true;
	} else {
		/* the base changed, or a settle came meanwhile */
		pthread_mutex_unlock(&a->lock);
		remove_dir(&rd);
		pthread_mutex_lock(&a->lock);
	}
	free(base);
	return true;
}

/* Under the lock: removes what was given back, without the lock. */
static void helper_remove(al_sb_cg_ahead *a)
{
	al_sb_cg_behind *behind = a->behind;
	size_t nb = a->n_behind;
	al_rundir *dirs = a->dirs;
	size_t nd = a->n_dirs;
	a->behind = NULL;
	a->n_behind = a->cap_behind = 0;
	a->dirs = NULL;
	a->n_dirs = a->cap_dirs = 0;
	pthread_mutex_unlock(&a->lock);
	/* the directories first: nothing waits on them, while a set waits
	 * for its init to finish exiting */
	for (size_t i = 0; i < nd; i++)
		remove_dir(&dirs[i]);
	free(dirs);
	for (size_t i = 0; i < nb; i++)
		remove_behind(&behind[i]);
	free(behind);
	pthread_mutex_lock(&a->lock);
}

/* Under the lock: a one-run handle's set is made (or its step found
 * none): nothing more is made ahead. */
static bool once_done(const al_sb_cg_ahead *a)
{
	return a->once && a->taken + a->missed > 0;
}

/* Makes the next set, removes what is given back, and stays (waiting)
 * while steps that took a set are running, so that what they give back
 * is removed without a thread started on their path; leaves once none
 * is and nothing is left to do. */
static void *helper(void *arg)
{
	al_sb_cg_ahead *a = arg;
	bool can_make = true, can_make_dir = true;
	pthread_mutex_lock(&a->lock);
	for (;;) {
		/* one run's handle: its one set, then only removal */
		if (once_done(a))
			can_make = false;
		if (a->stepped && a->enabled && a->after_step != NULL) {
			/* first: the next run may come at once */
			a->stepped = false;
			pthread_mutex_unlock(&a->lock);
			a->after_step(a->after_ctx);
			pthread_mutex_lock(&a->lock);
		} else if (a->enabled && !a->have && can_make)
			can_make = helper_make(a);
		else if (a->enabled && a->dir_base != NULL && !a->have_dir &&
			 can_make_dir)
			can_make_dir = helper_make_dir(a);
		else if (a->n_behind > 0 || a->n_dirs > 0)
			helper_remove(a);
		else if (a->in_flight > 0 && a->enabled)
			pthread_cond_wait(&a->wake, &a->lock);
		else
			break;
	}
	a->making = false;
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

/* Under the lock: a helper unless one is there (woken then), a finished
 * one joined first (it only returns once it has let go of the lock).
 * Without a thread, what was given back is removed now. */
static void start(al_sb_cg_ahead *a)
{
	if (a->making) {
		pthread_cond_signal(&a->wake);
		return;
	}
	if (a->joinable) {
		pthread_join(a->maker, NULL);
		a->joinable = false;
	}
	bool made = a->have || once_done(a);
	if (!a->enabled ||
	    (made && (a->dir_base == NULL || a->have_dir) &&
	     a->n_behind == 0 && a->n_dirs == 0 && a->in_flight == 0))
		return;
	if (pthread_create(&a->maker, NULL, helper, a) == 0) {
		a->making = true;
		a->joinable = true;
		return;
	}
	while (a->n_behind > 0 || a->n_dirs > 0)
		helper_remove(a);
}

void al_sb_cg_ahead_init(al_sb_cg_ahead *a, const al_sb_cgroups *cg,
			 bool enabled)
{
	memset(a, 0, sizeof(*a));
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->wake, NULL);
	a->cg = cg;
	a->enabled = enabled;
	a->ready.v2_fd = -1;
	a->ready_dir.owner_fd = -1;
}

static bool same_limits(const al_sb_cg_limits *x, const al_sb_cg_limits *y)
{
	return x->valid && y->valid && x->bits == y->bits &&
	       x->memory_bytes == y->memory_bytes && x->pids == y->pids &&
	       x->socket_bytes == y->socket_bytes;
}

al_sb_cg_taken al_sb_cg_ahead_take(al_sb_cg_ahead *a, al_sb_cgrun *out,
				   const al_sb_cg_limits *want)
{
	pthread_mutex_lock(&a->lock);
	al_sb_cg_taken got = AL_SB_CG_NONE;
	if (a->have) {
		*out = a->ready;
		got = !a->ready_limits.valid		      ? AL_SB_CG_UNLIMITED
		      : same_limits(&a->ready_limits, want) ? AL_SB_CG_AS_WANTED
							      : AL_SB_CG_OTHER;
		memset(&a->ready, 0, sizeof(a->ready));
		a->ready.v2_fd = -1;
		a->ready_limits.valid = false;
		a->have = false;
	}
	if (a->enabled) {
		a->last = *want;
		a->in_flight++;
		if (got != AL_SB_CG_NONE)
			a->taken++;
		else
			a->missed++;
		/* a helper still there makes the next one now */
		if (a->making)
			pthread_cond_signal(&a->wake);
	}
	pthread_mutex_unlock(&a->lock);
	return got;
}

int al_sb_cg_ahead_give(al_sb_cg_ahead *a, al_sb_cgrun *run, int init_pidfd,
			al_sb_uid *uid)
{
	pthread_mutex_lock(&a->lock);
	bool kept = false;
	if (a->enabled) {
		if (a->in_flight > 0)
			a->in_flight--;
		a->stepped = true;
		if (set_empty(run) && init_pidfd < 0) {
			kept = true; /* nothing to remove */
		} else if (grow((void **)&a->behind, &a->n_behind,
				&a->cap_behind, sizeof(*a->behind))) {
			a->behind[a->n_behind++] = (al_sb_cg_behind){
				.set = *run,
				.init_pidfd = init_pidfd,
				.uid = uid != NULL ? *uid
						   : (al_sb_uid){.fd = -1}};
			if (uid != NULL)
				uid->fd = -1;
			kept = true;
		}
		start(a);
	}
	pthread_mutex_unlock(&a->lock);
	if (kept) {
		memset(run, 0, sizeof(*run));
		run->v2_fd = -1;
		return 0;
	}
	al_child_reap(init_pidfd);
	return al_sb_cgrun_destroy(run);
}

void al_sb_cg_ahead_after_step(al_sb_cg_ahead *a, void (*fn)(void *ctx),
			       void *ctx)
{
	pthread_mutex_lock(&a->lock);
	a->after_step = fn;
	a->after_ctx = ctx;
	pthread_mutex_unlock(&a->lock);
}

void al_sb_cg_ahead_once(al_sb_cg_ahead *a)
{
	pthread_mutex_lock(&a->lock);
	a->once = true;
	pthread_mutex_unlock(&a->lock);
}

bool al_sb_cg_ahead_take_dir(al_sb_cg_ahead *a, const char *base,
			     al_rundir *out)
{
	if (base == NULL)
		return false;
	pthread_mutex_lock(&a->lock);
	bool got = false;
	if (a->enabled && !a->once) {
		if (a->dir_base == NULL || strcmp(a->dir_base, base) != 0) {
			char *b = strdup(base);
			if (b != NULL) {
				free(a->dir_base);
				a->dir_base = b;
			}
			/* made in the old base: removed behind */
			if (a->have_dir &&
			    grow((void **)&a->dirs, &a->n_dirs, &a->cap_dirs,
				 sizeof(*a->dirs))) {
				a->dirs[a->n_dirs++] = a->ready_dir;
				a->have_dir = false;
			}
		} else if (a->have_dir) {
			*out = a->ready_dir;
			a->have_dir = false;
			got = true;
		}
		/* the next one is made with the next cgroup set, started as
		 * this run's sandbox starts (al_sb_cg_ahead_refill) */
	}
	pthread_mutex_unlock(&a->lock);
	return got;
}

bool al_sb_cg_ahead_enabled(al_sb_cg_ahead *a)
{
	pthread_mutex_lock(&a->lock);
	bool enabled = a->enabled;
	pthread_mutex_unlock(&a->lock);
	return enabled;
}

int al_sb_cg_ahead_give_dir(al_sb_cg_ahead *a, al_rundir *rd)
{
	pthread_mutex_lock(&a->lock);
	/* out of the run id's sight first: the id may name a run again at
	 * once (a directory still there would refuse it) */
	bool kept = a->enabled && grow((void **)&a->dirs, &a->n_dirs,
				       &a->cap_dirs, sizeof(*a->dirs)) &&
		    al_rundir_set_aside(rd) == 0;
	if (kept) {
		a->dirs[a->n_dirs++] = *rd;
		start(a);
	}
	pthread_mutex_unlock(&a->lock);
	if (!kept)
		return al_rundir_remove(rd);
	memset(rd, 0, sizeof(*rd));
	rd->owner_fd = -1;
	return 0;
}

void al_sb_cg_ahead_refill(al_sb_cg_ahead *a)
{
	pthread_mutex_lock(&a->lock);
	start(a);
	pthread_mutex_unlock(&a->lock);
}

/* Every set and directory held is removed now, and nothing is made or
 * kept from here on; a helper still there is told and joined first
 * (without the lock, which it needs to leave). */
static void drop_all(al_sb_cg_ahead *a)
{
	pthread_mutex_lock(&a->lock);
	a->enabled = false;
	pthread_cond_broadcast(&a->wake);
	bool join = a->joinable;
	a->joinable = false;
	pthread_mutex_unlock(&a->lock);
	if (join)
		pthread_join(a->maker, NULL);
	pthread_mutex_lock(&a->lock);
	while (a->n_behind > 0 || a->n_dirs > 0)
		helper_remove(a);
	free(a->behind);
	free(a->dirs);
	a->behind = NULL;
	a->dirs = NULL;
	a->cap_behind = a->cap_dirs = 0;
	bool have = a->have, have_dir = a->have_dir;
	al_sb_cgrun ready = a->ready;
	al_rundir ready_dir = a->ready_dir;
	a->have = a->have_dir = false;
	a->in_flight = 0;
	free(a->dir_base);
	a->dir_base = NULL;
	pthread_mutex_unlock(&a->lock);
	if (have)
		remove_set(&ready);
	if (have_dir)
		remove_dir(&ready_dir);
}

void al_sb_cg_ahead_settle(al_sb_cg_ahead *a)
{
	drop_all(a);
}

void al_sb_cg_ahead_clear(al_sb_cg_ahead *a)
{
	drop_all(a);
	pthread_cond_destroy(&a->wake);
	pthread_mutex_destroy(&a->lock);
}

void al_sb_cg_ahead_counts(al_sb_cg_ahead *a, unsigned long long *taken,
			   unsigned long long *missed, bool *ready)
{
	pthread_mutex_lock(&a->lock);
	*taken = a->taken;
	*missed = a->missed;
	*ready = a->have;
	pthread_mutex_unlock(&a->lock);
}
