/* A cold run's cgroups made ahead, and removed behind (see
 * cgroups_ahead.h). */
#include "sandbox/cgroups_ahead.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child/supervise.h"
#include "core/log.h"

/* One helper's work: the sets to remove, and whether to make the next.
 * The set made is offered (mu, offered) before the removals start, which
 * wait for the inits still exiting: a step may take it from a helper
 * that is still removing. */
struct al_sb_cg_job {
	const al_sb_cgroups *cg;
	al_sb_cg_behind *behind;
	size_t n_behind;
	bool make;
	char name[64];
	al_sb_cg_limits limits; /* to write into the set made */
	bool made;
	al_sb_cgrun set;
	bool limited; /* limits written */
	pthread_mutex_t mu;
	bool offered; /* set is made and may be taken */
	bool claimed; /* a step took it */
};

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

/* A used set, once the init that was in it (if any) is reaped. */
static void remove_behind(al_sb_cg_behind *b)
{
	al_child_reap(b->init_pidfd);
	b->init_pidfd = -1;
	remove_set(&b->set);
	al_sb_uid_give(&b->uid);
}

static void run_job(struct al_sb_cg_job *j)
{
	if (j->make)
		j->made = al_sb_cgrun_make(j->cg, j->name, &j->set, NULL) == 0;
	if (j->made && j->limits.valid) {
		al_limits l = {.set = j->limits.bits,
			       .memory_bytes = j->limits.memory_bytes,
			       .pids = j->limits.pids};
		/* a failed write leaves the set for its taker to write */
		j->limited = al_sb_cgrun_limit(j->cg, &j->set, &l) == 0 &&
			     al_sb_cgrun_limit_sockets(j->cg, &j->set,
						       j->limits.socket_bytes) ==
				     0;
	}
	/* the files its taker reads after the run, opened here, off the
	 * run's path (a failure leaves them to be read by path) */
	if (j->made)
		(void)al_sb_cgrun_keep_reads(&j->set);
	pthread_mutex_lock(&j->mu);
	j->offered = j->made;
	pthread_mutex_unlock(&j->mu);
	for (size_t i = 0; i < j->n_behind; i++)
		remove_behind(&j->behind[i]);
	free(j->behind);
	j->behind = NULL;
	j->n_behind = 0;
}

static void job_free(struct al_sb_cg_job *j)
{
	pthread_mutex_destroy(&j->mu);
	free(j);
}

static void *helper(void *arg)
{
	run_job(arg);
	return NULL;
}

/* Under the lock: takes a finished helper's set (or waits for it). */
static void reap(al_sb_cg_ahead *a, bool wait)
{
	if (!a->making)
		return;
	int rc = wait ? pthread_join(a->maker, NULL)
		      : pthread_tryjoin_np(a->maker, NULL);
	if (rc != 0)
		return; /* still running */
	a->making = false;
	struct al_sb_cg_job *j = a->job;
	a->job = NULL;
	if (j->made && !j->claimed && !a->have) {
		a->ready = j->set;
		a->have = true;
		a->ready_limits = j->limits;
		/* written only in part: the taker writes all again */
		a->ready_limits.valid = j->limited;
	} else if (j->made && !j->claimed) {
		remove_set(&j->set);
	}
	job_free(j);
}

/* Under the lock, none ready: the set of a helper still removing, when
 * it has offered one (the helper no longer touches it). */
static bool claim_offered(al_sb_cg_ahead *a)
{
	struct al_sb_cg_job *j = a->making ? a->job : NULL;
	if (j == NULL)
		return false;
	bool got = false;
	pthread_mutex_lock(&j->mu);
	if (j->offered && !j->claimed) {
		j->claimed = true;
		a->ready = j->set;
		a->have = true;
		a->ready_limits = j->limits;
		a->ready_limits.valid = j->limited;
		got = true;
	}
	pthread_mutex_unlock(&j->mu);
	return got;
}

/* Under the lock: the work for the next helper, or NULL when there is
 * none (or no memory: the sets stay queued). */
static struct al_sb_cg_job *next_job(al_sb_cg_ahead *a)
{
	if (!a->enabled || (a->have && a->n_behind == 0))
		return NULL;
	struct al_sb_cg_job *j = calloc(1, sizeof(*j));
	if (j == NULL)
		return NULL;
	pthread_mutex_init(&j->mu, NULL);
	j->cg = a->cg;
	j->behind = a->behind;
	j->n_behind = a->n_behind;
	a->behind = NULL;
	a->n_behind = a->cap_behind = 0;
	j->make = !a->have;
	j->limits = a->last;
	char tag[24];
	snprintf(tag, sizeof(tag), "a%u", a->seq++);
	al_sb_cgrun_name(j->name, sizeof(j->name), tag);
	return j;
}

/* Under the lock: a helper for the sets given back and the next one. */
static void start(al_sb_cg_ahead *a)
{
	if (a->making)
		return;
	struct al_sb_cg_job *j = next_job(a);
	if (j == NULL)
		return;
	if (pthread_create(&a->maker, NULL, helper, j) == 0) {
		a->job = j;
		a->making = true;
		return;
	}
	/* no thread: the removals are done now, nothing is made */
	j->make = false;
	run_job(j);
	job_free(j);
}

void al_sb_cg_ahead_init(al_sb_cg_ahead *a, const al_sb_cgroups *cg,
			 bool enabled)
{
	memset(a, 0, sizeof(*a));
	pthread_mutex_init(&a->lock, NULL);
	a->cg = cg;
	a->enabled = enabled;
	a->ready.v2_fd = -1;
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
	reap(a, false);
	al_sb_cg_taken got = AL_SB_CG_NONE;
	if (a->have || claim_offered(a)) {
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
		if (got != AL_SB_CG_NONE)
			a->taken++;
		else
			a->missed++;
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
		if (a->n_behind == a->cap_behind) {
			size_t cap = a->cap_behind ? a->cap_behind * 2 : 4;
			al_sb_cg_behind *grown =
				realloc(a->behind, cap * sizeof(*grown));
			if (grown != NULL) {
				a->behind = grown;
				a->cap_behind = cap;
			}
		}
		if (a->n_behind < a->cap_behind) {
			a->behind[a->n_behind++] = (al_sb_cg_behind){
				.set = *run,
				.init_pidfd = init_pidfd,
				.uid = uid != NULL ? *uid
						   : (al_sb_uid){.fd = -1}};
			if (uid != NULL)
				uid->fd = -1;
			kept = true;
		}
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

void al_sb_cg_ahead_refill(al_sb_cg_ahead *a)
{
	pthread_mutex_lock(&a->lock);
	reap(a, false);
	start(a);
	pthread_mutex_unlock(&a->lock);
}

/* Under the lock: every set held is removed now, and none is made. */
static void drop_all(al_sb_cg_ahead *a)
{
	reap(a, true);
	for (size_t i = 0; i < a->n_behind; i++)
		remove_behind(&a->behind[i]);
	free(a->behind);
	a->behind = NULL;
	a->n_behind = a->cap_behind = 0;
	if (a->have)
		remove_set(&a->ready);
	a->have = false;
	a->enabled = false;
}

void al_sb_cg_ahead_settle(al_sb_cg_ahead *a)
{
	pthread_mutex_lock(&a->lock);
	drop_all(a);
	pthread_mutex_unlock(&a->lock);
}

void al_sb_cg_ahead_clear(al_sb_cg_ahead *a)
{
	pthread_mutex_lock(&a->lock);
	drop_all(a);
	pthread_mutex_unlock(&a->lock);
	pthread_mutex_destroy(&a->lock);
}

void al_sb_cg_ahead_counts(al_sb_cg_ahead *a, unsigned long long *taken,
			   unsigned long long *missed, bool *ready)
{
	pthread_mutex_lock(&a->lock);
	reap(a, false);
	*taken = a->taken;
	*missed = a->missed;
	*ready = a->have || claim_offered(a);
	pthread_mutex_unlock(&a->lock);
}
