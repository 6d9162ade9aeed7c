/* Warm pools of one handle: a refill thread keeps, per language, ready +
 * preparing + in use <= size; a run takes a ready member or waits for the
 * one being prepared.  See pool.h and docs/sandbox.md, "Warm pools". */
#include "sandbox/pool.h"
#include "core/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A run waits this long at most for a member being prepared: far above
 * what preparing one takes (docs/performance.md), so past this something
 * is wrong and cold is the better bet. */
#define TAKE_WAIT_MS 2000
/* After a member failed to start, the language rests 1 s, doubled per
 * failure in a row up to 32 s (a toolchain gone, uids all taken). */
#define FAIL_BACKOFF_MS 1000
#define FAIL_BACKOFF_MAX_SHIFT 5

struct lang {
	al_sb_pool_lang cfg;
	al_sb_member *ready[AL_SB_POOL_MAX_SIZE];
	unsigned n_ready, preparing, in_use;
	uint64_t rest_until_ms; /* back-off after a failed start */
	unsigned made;		/* members made (without refill: <= size) */
	unsigned fails;		/* failed starts in a row */
	/* javascript: the rlimits new members start with, those of the
	 * latest run that asked (al_sb_warm_fixed_rlimits) */
	al_limits start_limits;
};

struct al_sb_pool {
	const al_sb_context *ctx;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	bool stopping;
	struct lang langs[AL_SB_POOL_MAX_LANGS];
	size_t n_langs;
	unsigned seq;
	al_sb_pool_stats stats;
};

/* The language the thread should prepare a member for now, or NULL.
 * *rest_ms: how long until a resting language may go again (0: none). */
static struct lang *wanted(al_sb_pool *p, uint64_t now, uint64_t *rest_ms)
{
	*rest_ms = 0;
	for (size_t i = 0; i < p->n_langs; i++) {
		struct lang *l = &p->langs[i];
		if (l->n_ready + l->preparing + l->in_use >= l->cfg.size)
			continue;
		if (!l->cfg.refill && l->made >= l->cfg.size)
			continue;
		if (l->rest_until_ms > now) {
			uint64_t r = l->rest_until_ms - now;
			if (*rest_ms == 0 || r < *rest_ms)
				*rest_ms = r;
			continue;
		}
		return l;
	}
	return NULL;
}

static void *refill_main(void *arg)
{
	al_sb_pool *p = arg;
	pthread_mutex_lock(&p->mu);
	while (!p->stopping) {
		uint64_t rest = 0;
		struct lang *l = wanted(p, al_mono_ms(), &rest);
		if (l == NULL) {
			if (rest > 0) {
				struct timespec ts;
				al_mono_deadline(&ts, (long)rest);
				pthread_cond_timedwait(&p->cv, &p->mu, &ts);
			} else {
				pthread_cond_wait(&p->cv, &p->mu);
			}
			continue;
		}
		l->preparing++;
		l->made++;
		unsigned n = p->seq++;
		al_limits start = l->start_limits;
		pthread_mutex_unlock(&p->mu);

		char run_id[40], cg_name[64];
		snprintf(run_id, sizeof(run_id), "warm-%d-%u", (int)getpid(), n);
		char tag[16];
		snprintf(tag, sizeof(tag), "w%u", n);
		al_sb_cgrun_name(cg_name, sizeof(cg_name), tag);
		al_sb_member *m = NULL;
		int rc = al_sb_member_prepare(p->ctx, l->cfg.language,
					      l->cfg.network, l->cfg.workspace,
					      l->cfg.inbox, &start, run_id,
					      cg_name, &m, NULL);

		pthread_mutex_lock(&p->mu);
		l->preparing--;
		if (rc < 0) {
			p->stats.failed++;
			l->made--;
			unsigned shift = l->fails < FAIL_BACKOFF_MAX_SHIFT
						 ? l->fails
						 : FAIL_BACKOFF_MAX_SHIFT;
			l->fails++;
			l->rest_until_ms = al_mono_ms() + ((uint64_t)FAIL_BACKOFF_MS
							<< shift);
		} else if (p->stopping) {
			pthread_mutex_unlock(&p->mu);
			al_sb_member_destroy(m);
			pthread_mutex_lock(&p->mu);
		} else {
			p->stats.prepared++;
			l->fails = 0;
			l->ready[l->n_ready++] = m;
		}
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int al_sb_pool_start(const al_sb_context *ctx, al_sb_pool **out,
		     al_error **err)
{
	*out = NULL;
	size_t n = 0;
	for (size_t i = 0; i < ctx->cfg.n_pool; i++)
		if (al_sb_warm_supported(ctx->cfg.pool[i].language))
			n++;
	if (n == 0)
		return 0; /* nothing to warm: no thread */
	al_sb_pool *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return -ENOMEM;
	p->ctx = ctx;
	for (size_t i = 0; i < ctx->cfg.n_pool; i++)
		if (al_sb_warm_supported(ctx->cfg.pool[i].language)) {
			struct lang *l = &p->langs[p->n_langs++];
			l->cfg = ctx->cfg.pool[i];
			al_sb_warm_default_limits(&l->start_limits);
		}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	int rc = pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (rc != 0) {
		free(p);
		return al_error_set(err, AL_ERR_INTERNAL, rc, NULL,
				    "cannot start the warm pool");
	}
	pthread_mutex_init(&p->mu, NULL);
	rc = pthread_create(&p->thread, NULL, refill_main, p);
	if (rc != 0) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		free(p);
		return al_error_set(err, AL_ERR_INTERNAL, rc, NULL,
				    "cannot start the warm pool");
	}
	*out = p;
	return 0;
}

static struct lang *find_lang(al_sb_pool *p, const char *language)
{
	for (size_t i = 0; language != NULL && i < p->n_langs; i++)
		if (strcmp(p->langs[i].cfg.language, language) == 0)
			return &p->langs[i];
	return NULL;
}

al_sb_member *al_sb_pool_take(al_sb_pool *p, const al_exec *exec,
			      const char *tc_path)
{
	if (p == NULL)
		return NULL;
	al_sb_member *m = NULL;
	al_sb_member *stale[AL_SB_POOL_MAX_SIZE];
	unsigned n_stale = 0;
	pthread_mutex_lock(&p->mu);
	struct lang *l = find_lang(p, exec->request->language);
	if (l == NULL)
		goto out;
	/* every member of a language has its one class: check it first */
	al_sb_warm_class cls = {.network = l->cfg.network,
				.workspace = l->cfg.workspace,
				.tc_path = tc_path,
				.inbox = l->cfg.inbox};
	snprintf(cls.language, sizeof(cls.language), "%s", l->cfg.language);
	if (al_sb_warm_mismatch(&cls, exec, tc_path) != NULL)
		goto cold;
	/* A run with other rlimits than javascript members start with:
	 * none on its way could serve it; later ones start with its. */
	bool fresh = true;
	if (al_sb_warm_fixed_rlimits(l->cfg.language) &&
	    !al_sb_warm_same_rlimits(&l->start_limits,
				     &exec->request->limits)) {
		l->start_limits = exec->request->limits;
		fresh = false;
	}
	/* None ready, but one on its way (being prepared, or about to be:
	 * right after ensure the thread may not have begun): wait for it. */
	struct timespec until;
	al_mono_deadline(&until, TAKE_WAIT_MS);
	uint64_t rest = 0;
	while (fresh && l->n_ready == 0 && !p->stopping &&
	       (l->preparing > 0 || wanted(p, al_mono_ms(), &rest) == l))
		if (pthread_cond_timedwait(&p->cv, &p->mu, &until) != 0)
			break;
	for (unsigned i = l->n_ready; i-- > 0;) {
		/* the member's own class (its interpreter, observed when it
		 * was made) must match too */
		const char *why =
			al_sb_warm_mismatch(&l->ready[i]->cls, exec, tc_path);
		if (why != NULL && strcmp(why, "rlimit") == 0 &&
		    l->ready[i]->cls.fixed_rlimits) {
			/* members follow the latest run's rlimits: this one
			 * makes way for one started with them */
			stale[n_stale++] = l->ready[i];
			l->ready[i] = l->ready[--l->n_ready];
			continue;
		}
		if (why != NULL)
			continue;
		m = l->ready[i];
		l->ready[i] = l->ready[--l->n_ready];
		l->in_use++;
		p->stats.taken++;
		goto out;
	}
cold:
	p->stats.cold++;
out:
	if (n_stale > 0)
		pthread_cond_broadcast(&p->cv); /* room for new members */
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < n_stale; i++)
		al_sb_member_destroy(stale[i]);
	return m;
}

void al_sb_pool_done(al_sb_pool *p, const char *language)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	struct lang *l = find_lang(p, language);
	if (l != NULL && l->in_use > 0)
		l->in_use--;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

int al_sb_pool_renew(al_sb_pool *p, int timeout_ms)
{
	if (p == NULL)
		return -ENOENT;
	struct timespec until;
	al_mono_deadline(&until, timeout_ms);
	int rc = 0;
	pthread_mutex_lock(&p->mu);
	/* A member used by a run is made again, even without refill. */
	for (size_t i = 0; i < p->n_langs; i++) {
		struct lang *l = &p->langs[i];
		if (l->in_use > 0) {
			rc = -EBUSY;
			goto out;
		}
		l->made = l->n_ready + l->preparing;
	}
	pthread_cond_broadcast(&p->cv);
	for (;;) {
		bool full = true;
		for (size_t i = 0; full && i < p->n_langs; i++) {
			const struct lang *l = &p->langs[i];
			if (l->fails > 0) {
				rc = -EIO; /* it could not be made */
				goto out;
			}
			full = l->n_ready >= l->cfg.size && l->preparing == 0;
		}
		if (full || p->stopping)
			break;
		if (pthread_cond_timedwait(&p->cv, &p->mu, &until) != 0) {
			rc = -ETIMEDOUT;
			break;
		}
	}
	if (rc == 0 && p->stopping)
		rc = -ESHUTDOWN;
out:
	pthread_mutex_unlock(&p->mu);
	return rc;
}

size_t al_sb_pool_cgroups(al_sb_pool *p, char (*names)[AL_SB_CG_NAME_MAX],
			  size_t max)
{
	size_t n = 0;
	if (p == NULL)
		return 0;
	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < p->n_langs; i++)
		for (unsigned j = 0; j < p->langs[i].n_ready && n < max; j++) {
			const char *dir = p->langs[i].ready[j]->cg.v2_dir;
			const char *base = dir != NULL ? strrchr(dir, '/') : NULL;
			if (base != NULL)
				snprintf(names[n++], AL_SB_CG_NAME_MAX, "%s",
					 base + 1);
		}
	pthread_mutex_unlock(&p->mu);
	return n;
}

void al_sb_pool_get_stats(al_sb_pool *p, al_sb_pool_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	*out = p->stats;
	for (size_t i = 0; i < p->n_langs; i++)
		out->idle += p->langs[i].n_ready;
	pthread_mutex_unlock(&p->mu);
}

int al_sb_pool_stop(al_sb_pool *p)
{
	if (p == NULL)
		return 0;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	int rc = 0;
	for (size_t i = 0; i < p->n_langs; i++)
		for (unsigned j = 0; j < p->langs[i].n_ready; j++)
			if (al_sb_member_destroy(p->langs[i].ready[j]) < 0)
				rc = -EBUSY;
	pthread_cond_destroy(&p->cv);
	pthread_mutex_destroy(&p->mu);
	free(p);
	return rc;
}
