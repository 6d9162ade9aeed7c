/* The daemon's idle supervisors (see idle_pool.h). */
#include "server/idle_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "core/util.h"
#include "sandbox/sandbox.h"
#include "supervisor/reuse.h"

/* How long a new supervisor gets to ensure its provider. */
#define READY_MS 30000
/* After a supervisor did not become ready the next try waits this long,
 * doubled for each failure in a row up to RETRY_MAX_MS (a configuration
 * the provider refuses must not fork a process every moment). */
#define RETRY_MS 1000
#define RETRY_MAX_MS 60000
#define POLL_MS 500
/* A target grown above its configured number (a run found all
 * of its supervisors lent) gives one back after this long without such
 * a run: the pool follows the concurrency the runs arrive with over
 * minutes, not per burst. */
#define SHRINK_AFTER_MS 60000

typedef struct target {
	char *lang;	     /* NULL: generic */
	char *provider;
	char *base_config;   /* the candidate's, as runs carry it (or NULL) */
	char *ensure_config; /* what the supervisor ensures (or NULL) */
	unsigned want;
	unsigned floor;	     /* want as configured; a generic one grows */
	int64_t missed_at;   /* when a run last found all of it lent */
	unsigned have;	     /* ready + being started + lent to a run */
	unsigned lent;	     /* of which lent: counted as runs in flight */
	/* Runs one supervisor serves (docs/durability.md, "A supervisor
	 * that serves several runs"): the sandbox's, generic or warm. */
	unsigned runs;
} target;

typedef struct entry {
	struct entry *next;
	al_idle_sup *sup;
	size_t target;
} entry;

struct al_idle_pool {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	al_durable *d;
	unsigned (*busy)(void *ctx);
	void *ctx;
	bool stop;
	uint64_t gen; /* configuration generation */
	target *targets;
	size_t n_targets;
	unsigned concurrency, total;
	int64_t shrink_after_ms;
	entry *ready;
	al_idle_stats st;
};

static void targets_free(target *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(t[i].lang);
		free(t[i].provider);
		free(t[i].base_config);
		free(t[i].ensure_config);
	}
	free(t);
}

static bool same_str(const char *a, const char *b)
{
	return (a == NULL && b == NULL) ||
	       (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Ends idle supervisors outside the lock (each may take a moment). */
static void discard_list(entry *e)
{
	while (e != NULL) {
		entry *next = e->next;
		al_idle_discard(e->sup);
		free(e);
		e = next;
	}
}

/* Takes the ended ones out of the ready list (lock held). */
static entry *reap_locked(al_idle_pool *p)
{
	entry *dead = NULL, **pp = &p->ready;
	while (*pp != NULL) {
		entry *e = *pp;
		if (al_idle_alive(e->sup)) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		if (e->target < p->n_targets)
			p->targets[e->target].have--;
		p->st.ready--;
		if (p->targets[e->target].lang != NULL)
			p->st.ready_warm--;
		e->next = dead;
		dead = e;
	}
	return dead;
}

/* Supervisors kept above the configured numbers, every target's (lock
 * held). */
static unsigned grown_locked(const al_idle_pool *p)
{
	unsigned grown = 0;
	for (size_t i = 0; i < p->n_targets; i++)
		grown += p->targets[i].want - p->targets[i].floor;
	return grown;
}

/* A run found no idle supervisor of the kind it wanted: the warm ones of
 * its language (language set) or the generic ones (NULL).  When every
 * one of that target is lent to a run, the runs in flight need more
 * than configured: one more is kept, up to `concurrency`, and no more
 * than `concurrency` above the configured numbers in all, so the memory
 * the grown ones hold stays bounded whatever the mix of languages (lock
 * held). */
static void grow_locked(al_idle_pool *p, const char *provider,
			const char *config_json, const char *language)
{
	for (size_t i = 0; i < p->n_targets; i++) {
		target *t = &p->targets[i];
		if (!same_str(t->lang, language) ||
		    strcmp(t->provider, provider) != 0 ||
		    !same_str(t->base_config, config_json) ||
		    t->lent < t->want)
			continue;
		t->missed_at = al_mono_ms();
		if (t->want < p->concurrency &&
		    grown_locked(p) < p->concurrency) {
			t->want++;
			p->total++;
		}
	}
}

/* Targets grown and missed by no run for SHRINK_AFTER_MS keep one
 * fewer: a ready one above the new number is taken out here, for the
 * caller to end; a lent one above it ends when it comes back (lock
 * held). */
static entry *shrink_locked(al_idle_pool *p)
{
	entry *out = NULL;
	int64_t now = al_mono_ms();
	for (size_t i = 0; i < p->n_targets; i++) {
		target *t = &p->targets[i];
		if (t->want <= t->floor ||
		    now - t->missed_at < p->shrink_after_ms)
			continue;
		t->want--;
		p->total--;
		t->missed_at = now;
		if (t->have <= t->want)
			continue;
		for (entry **pp = &p->ready; *pp != NULL; pp = &(*pp)->next) {
			if ((*pp)->target != i)
				continue;
			entry *e = *pp;
			*pp = e->next;
			t->have--;
			p->st.ready--;
			if (t->lang != NULL)
				p->st.ready_warm--;
			e->next = out;
			out = e;
			break;
		}
	}
	return out;
}

/* The target short of supervisors, within the budget, or -1. */
static long pick_locked(al_idle_pool *p, unsigned busy)
{
	unsigned idle = 0;
	/* A lent one's run is already among the busy. */
	for (size_t i = 0; i < p->n_targets; i++)
		idle += p->targets[i].have - p->targets[i].lent;
	if (busy + idle >= p->concurrency + p->total)
		return -1;
	for (size_t i = 0; i < p->n_targets; i++)
		if (p->targets[i].have < p->targets[i].want)
			return (long)i;
	return -1;
}

static void *pool_main(void *arg)
{
	al_idle_pool *p = arg;
	int64_t retry_at = 0, backoff = RETRY_MS;

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		entry *dead = reap_locked(p);
		if (dead == NULL)
			dead = shrink_locked(p);
		if (dead != NULL) {
			pthread_mutex_unlock(&p->lock);
			discard_list(dead);
			pthread_mutex_lock(&p->lock);
			continue;
		}
		long t = -1;
		if (al_mono_ms() >= retry_at) {
			pthread_mutex_unlock(&p->lock);
			unsigned busy = p->busy(p->ctx);
			pthread_mutex_lock(&p->lock);
			if (p->stop)
				break;
			t = pick_locked(p, busy);
		}
		if (t < 0) {
			struct timespec ts;
			al_deadline(CLOCK_REALTIME, &ts, POLL_MS);
			pthread_cond_timedwait(&p->cond, &p->lock, &ts);
			continue;
		}
		target *tg = &p->targets[t];
		uint64_t gen = p->gen;
		char *prov = strdup(tg->provider);
		char *cfg = tg->ensure_config ? strdup(tg->ensure_config) : NULL;
		bool warm = tg->lang != NULL;
		unsigned runs = tg->runs;
		if (prov == NULL || (tg->ensure_config != NULL && cfg == NULL)) {
			free(prov);
			free(cfg);
			retry_at = al_mono_ms() + RETRY_MS;
			continue;
		}
		tg->have++;
		pthread_mutex_unlock(&p->lock);
		al_idle_sup *sup = NULL;
		int rc = al_idle_spawn(p->d, prov, cfg, runs, READY_MS, &sup);
		free(prov);
		if (cfg != NULL)
			al_explicit_free_str(cfg);
		entry *e = rc == 0 ? calloc(1, sizeof(*e)) : NULL;
		pthread_mutex_lock(&p->lock);
		p->st.spawned++;
		if (rc < 0) {
			p->st.failed++;
			retry_at = al_mono_ms() + backoff;
			backoff = backoff * 2 > RETRY_MAX_MS ? RETRY_MAX_MS
							     : backoff * 2;
		} else {
			backoff = RETRY_MS;
		}
		if (e == NULL || gen != p->gen || p->stop) {
			/* Failed, or the configuration changed meanwhile. */
			if (gen == p->gen)
				p->targets[t].have--;
			pthread_mutex_unlock(&p->lock);
			if (e != NULL)
				e->sup = sup;
			else
				al_idle_discard(sup);
			discard_list(e);
			pthread_mutex_lock(&p->lock);
			continue;
		}
		e->sup = sup;
		e->target = (size_t)t;
		e->next = p->ready;
		p->ready = e;
		p->st.ready++;
		if (warm)
			p->st.ready_warm++;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int al_idle_pool_new(al_durable *d, unsigned (*busy)(void *ctx), void *ctx,
		     al_idle_pool **out)
{
	al_idle_pool *p = calloc(1, sizeof(*p));
	*out = NULL;
	if (p == NULL)
		return -ENOMEM;
	p->d = d;
	p->busy = busy;
	p->shrink_after_ms = SHRINK_AFTER_MS;
#ifdef AL_TEST_BUILD
	/* The tests' minute (tests/integration/test_idle_grow.py). */
	const char *shrink = getenv("AIRLOCK_TEST_IDLE_SHRINK_MS");
	if (shrink != NULL && *shrink != '\0')
		p->shrink_after_ms = strtoll(shrink, NULL, 10);
#endif
	p->ctx = ctx;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	/* A small stack: it only starts processes. */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	int rc = pthread_create(&p->thread, &attr, pool_main, p);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		pthread_cond_destroy(&p->cond);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return -rc;
	}
	*out = p;
	return 0;
}

void al_idle_pool_free(al_idle_pool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	discard_list(p->ready);
	targets_free(p->targets, p->n_targets);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static int add_target(target **v, size_t *n, const char *lang,
		      const char *provider, const char *base, json_t *ensure,
		      unsigned want)
{
	target *nv = realloc(*v, (*n + 1) * sizeof(*nv));
	if (nv == NULL)
		return -ENOMEM;
	*v = nv;
	target *t = &nv[*n];
	memset(t, 0, sizeof(*t));
	(*n)++;
	t->want = t->floor = want;
	/* The sandbox's serve several, a warm one making its member again
	 * between runs (docs/durability.md). */
	t->runs = strcmp(provider, "sandbox") == 0 ? AL_SUP_RUNS_MAX : 1;
	if ((lang != NULL && (t->lang = strdup(lang)) == NULL) ||
	    (t->provider = strdup(provider)) == NULL ||
	    (base != NULL && (t->base_config = strdup(base)) == NULL) ||
	    (ensure != NULL &&
	     (t->ensure_config = json_dumps(ensure, JSON_COMPACT)) == NULL))
		return -ENOMEM;
	return 0;
}

/* One warm target (al_sandbox_idle_targets' callback). */
struct warm_ctx {
	target **v;
	size_t *n;
	const al_cfg_candidate *c;
};

static int add_warm(void *ctx, const char *language, unsigned size,
		    json_t *ensure)
{
	struct warm_ctx *w = ctx;
	return add_target(w->v, w->n, language, w->c->provider,
			  w->c->config_json, ensure, size);
}

int al_idle_pool_configure(al_idle_pool *p, const al_config *cfg)
{
	target *v = NULL;
	size_t n = 0;
	unsigned total = 0;
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < cfg->n_candidates; i++) {
		const al_cfg_candidate *c = &cfg->candidates[i];
		json_t *o = c->config_json != NULL
				    ? json_loads(c->config_json, 0, NULL)
				    : NULL;
		struct warm_ctx w = {&v, &n, c};
		rc = al_sandbox_idle_targets(c->provider, o, add_warm, &w);
		/* A provider module is loaded by the supervisor that runs
		 * its run, from the run's record: none is started ahead. */
		if (rc == 0 && i == 0 && cfg->idle_supervisors > 0 &&
		    c->module == NULL) {
			/* Generic ones hold no warm sandbox of their own. */
			al_sandbox_config_drop_pools(c->provider, o);
			rc = add_target(&v, &n, NULL, c->provider,
					c->config_json, o,
					cfg->idle_supervisors);
		}
		json_decref(o);
	}
	if (rc < 0) {
		targets_free(v, n);
		return rc;
	}
	for (size_t i = 0; i < n; i++)
		total += v[i].want;
	pthread_mutex_lock(&p->lock);
	entry *old = p->ready;
	p->ready = NULL;
	p->st.ready = p->st.ready_warm = 0;
	targets_free(p->targets, p->n_targets);
	p->targets = v;
	p->n_targets = n;
	p->total = total;
	p->concurrency = cfg->concurrency;
	p->gen++;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	discard_list(old);
	return 0;
}

al_idle_sup *al_idle_pool_take(al_idle_pool *p, const char *provider,
			       const char *config_json, const char *language,
			       bool *warm, al_idle_lend *lend)
{
	entry *found = NULL;
	*warm = false;
	memset(lend, 0, sizeof(*lend));
	pthread_mutex_lock(&p->lock);
	for (int pass = 0; pass < 2 && found == NULL; pass++) {
		for (entry **pp = &p->ready; *pp != NULL; pp = &(*pp)->next) {
			const target *t = &p->targets[(*pp)->target];
			bool lang_ok = pass == 0 ? t->lang != NULL &&
							   language != NULL &&
							   strcmp(t->lang,
								  language) == 0
						 : t->lang == NULL;
			if (!lang_ok || strcmp(t->provider, provider) != 0 ||
			    !same_str(t->base_config, config_json) ||
			    !al_idle_alive((*pp)->sup))
				continue;
			found = *pp;
			*pp = found->next;
			*warm = t->lang != NULL;
			/* One that serves another run after this one stays
			 * counted (lent): no replacement is started for it. */
			if (al_idle_reusable(found->sup)) {
				p->targets[found->target].lent++;
				lend->active = true;
				lend->target = found->target;
				lend->gen = p->gen;
			} else {
				p->targets[found->target].have--;
			}
			p->st.ready--;
			if (*warm)
				p->st.ready_warm--;
			break;
		}
	}
	/* A run of a pooled language that got no warm one counts for its
	 * language's warm target, whatever it got instead. */
	if (language != NULL && !*warm)
		grow_locked(p, provider, config_json, language);
	if (found == NULL)
		grow_locked(p, provider, config_json, NULL);
	/* The refill starts once the run is handed over (al_idle_pool_count):
	 * a new supervisor's start-up beside the run's persisting slows its
	 * fsyncs and competes for the CPU. */
	pthread_mutex_unlock(&p->lock);
	if (found == NULL)
		return NULL;
	al_idle_sup *sup = found->sup;
	free(found);
	return sup;
}

void al_idle_pool_return(al_idle_pool *p, al_idle_lend *lend,
			 al_idle_sup *sup)
{
	entry *e = NULL;
	if (!lend->active) {
		al_idle_discard(sup);
		return;
	}
	lend->active = false;
	if (sup != NULL && al_idle_alive(sup))
		e = calloc(1, sizeof(*e));
	pthread_mutex_lock(&p->lock);
	bool current = lend->gen == p->gen && !p->stop;
	bool surplus = false;
	if (current) {
		target *t = &p->targets[lend->target];
		t->lent--;
		/* the target shrank while it served */
		surplus = t->have > t->want;
	}
	if (e != NULL && current && !surplus) {
		e->sup = sup;
		e->target = lend->target;
		e->next = p->ready;
		p->ready = e;
		p->st.ready++;
		p->st.reused++;
		if (p->targets[e->target].lang != NULL)
			p->st.ready_warm++;
		sup = NULL;
	} else if (current) {
		/* Not coming back (or not wanted): a replacement may
		 * start. */
		p->targets[lend->target].have--;
	}
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	if (sup != NULL) {
		free(e);
		al_idle_discard(sup);
	}
}

void al_idle_pool_count(al_idle_pool *p, bool handed, bool warm)
{
	pthread_mutex_lock(&p->lock);
	if (handed) {
		p->st.handoffs++;
		if (warm)
			p->st.handoffs_warm++;
	} else {
		p->st.cold++;
	}
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

void al_idle_pool_stats(al_idle_pool *p, al_idle_stats *st)
{
	pthread_mutex_lock(&p->lock);
	*st = p->st;
	st->wanted_generic = st->wanted_warm = 0;
	for (size_t i = 0; i < p->n_targets; i++) {
		if (p->targets[i].lang == NULL)
			st->wanted_generic += p->targets[i].want;
		else
			st->wanted_warm += p->targets[i].want;
	}
	pthread_mutex_unlock(&p->lock);
}
