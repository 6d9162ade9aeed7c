/* Concurrency slots.  Waiters queue in arrival order; whenever a slot
 * frees (or someone arrives) the queue is scanned from the front and every
 * waiter whose global and tenant quotas allow it is granted, so a tenant at
 * its own quota does not hold back another tenant (no head-of-line
 * blocking) while each tenant's waiters stay first come, first served. */
#include "host/slots.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"

typedef struct tenant_use {
	char *tenant;
	unsigned in_use;
	struct tenant_use *next;
} tenant_use;

typedef struct waiter {
	const char *tenant;
	unsigned tenant_max;
	bool granted;
	pthread_cond_t cond;
	struct waiter *next;
} waiter;

struct al_slots {
	pthread_mutex_t lock;
	unsigned global_max;
	unsigned in_use;
	unsigned n_waiters;
	tenant_use *tenants;
	waiter *head, *tail;
};

al_slots *al_slots_new(unsigned global_max)
{
	al_slots *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	pthread_mutex_init(&s->lock, NULL);
	s->global_max = global_max ? global_max : 1;
	return s;
}

void al_slots_free(al_slots *s)
{
	if (!s)
		return;
	for (tenant_use *t = s->tenants, *n; t; t = n) {
		n = t->next;
		free(t->tenant);
		free(t);
	}
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* Caller holds the lock.  NULL only on allocation failure. */
static tenant_use *use_of(al_slots *s, const char *tenant)
{
	for (tenant_use *t = s->tenants; t; t = t->next)
		if (strcmp(t->tenant, tenant) == 0)
			return t;
	tenant_use *t = calloc(1, sizeof(*t));
	if (!t || !(t->tenant = strdup(tenant))) {
		free(t);
		return NULL;
	}
	t->next = s->tenants;
	s->tenants = t;
	return t;
}

static void unlink_waiter(al_slots *s, waiter *w)
{
	waiter **pp = &s->head;
	waiter *prev = NULL;
	while (*pp && *pp != w) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (!*pp)
		return;
	*pp = w->next;
	if (s->tail == w)
		s->tail = prev;
	s->n_waiters--;
}

/* Caller holds the lock: grants slots to waiters in queue order. */
static void grant_waiters(al_slots *s)
{
	waiter *w = s->head;
	while (w && s->in_use < s->global_max) {
		waiter *next = w->next;
		tenant_use *tu = use_of(s, w->tenant);
		if (tu && (w->tenant_max == 0 || tu->in_use < w->tenant_max)) {
			tu->in_use++;
			s->in_use++;
			w->granted = true;
			unlink_waiter(s, w);
			pthread_cond_signal(&w->cond);
		}
		w = next;
	}
}

int al_slots_acquire(al_slots *s, const char *tenant, unsigned tenant_max,
		     uint64_t wait_ms, const al_cancel *cancel)
{
	struct timespec deadline;
	pthread_condattr_t attr;
	int rc = 0;

	/* On the heap: the queue links to it while this call waits. */
	waiter *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->tenant = tenant;
	w->tenant_max = tenant_max;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &attr);
	pthread_condattr_destroy(&attr);
	al_mono_deadline(&deadline, wait_ms);

	pthread_mutex_lock(&s->lock);
	if (s->tail)
		s->tail->next = w;
	else
		s->head = w;
	s->tail = w;
	s->n_waiters++;
	grant_waiters(s);
	while (!w->granted) {
		if (cancel && al_cancel_state(cancel) != AL_CANCEL_NONE) {
			rc = -ECANCELED;
			break;
		}
		/* Wake at least every 50 ms to notice a cancel. */
		struct timespec now, step;
		clock_gettime(CLOCK_MONOTONIC, &now);
		step = now;
		step.tv_nsec += 50000000L;
		if (step.tv_nsec >= 1000000000L) {
			step.tv_sec++;
			step.tv_nsec -= 1000000000L;
		}
		bool last = step.tv_sec > deadline.tv_sec ||
			    (step.tv_sec == deadline.tv_sec &&
			     step.tv_nsec >= deadline.tv_nsec);
		int wr = pthread_cond_timedwait(&w->cond, &s->lock,
						last ? &deadline : &step);
		if (wr == ETIMEDOUT && last && !w->granted) {
			rc = -EBUSY;
			break;
		}
	}
	if (!w->granted)
		unlink_waiter(s, w);
	pthread_mutex_unlock(&s->lock);
	pthread_cond_destroy(&w->cond);
	free(w);
	return rc;
}

void al_slots_release(al_slots *s, const char *tenant)
{
	pthread_mutex_lock(&s->lock);
	tenant_use *tu = use_of(s, tenant);
	if (tu && tu->in_use > 0)
		tu->in_use--;
	if (s->in_use > 0)
		s->in_use--;
	grant_waiters(s);
	pthread_mutex_unlock(&s->lock);
}

void al_slots_stats(al_slots *s, unsigned *in_use, unsigned *waiters)
{
	pthread_mutex_lock(&s->lock);
	*in_use = s->in_use;
	*waiters = s->n_waiters;
	pthread_mutex_unlock(&s->lock);
}
