/* Metrics: run counts by outcome, provider and language; a duration
 * histogram; audit write failures.  Label values are configuration names
 * (providers) and language names, never request content; a language label
 * is only ever a name that passed validation. */
#include "host/metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint64_t buckets_ms[] = {10,   50,   100,   250,   500,  1000,
				      2500, 5000, 10000, 30000, 60000};
#define N_BUCKETS (sizeof(buckets_ms) / sizeof(buckets_ms[0]))

typedef struct counter {
	al_outcome outcome;
	char *provider, *language;
	uint64_t count;
	struct counter *next;
} counter;

struct al_metrics {
	pthread_mutex_t lock;
	counter *counters;
	uint64_t bucket[N_BUCKETS + 1]; /* last: +Inf */
	uint64_t duration_sum_ms, duration_count;
	uint64_t audit_failures;
	uint64_t audit_records[2]; /* [1]: committed with a sync */
};

al_metrics *al_metrics_new(void)
{
	al_metrics *m = calloc(1, sizeof(*m));
	if (m)
		pthread_mutex_init(&m->lock, NULL);
	return m;
}

void al_metrics_free(al_metrics *m)
{
	if (!m)
		return;
	for (counter *c = m->counters, *n; c; c = n) {
		n = c->next;
		free(c->provider);
		free(c->language);
		free(c);
	}
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void al_metrics_run(al_metrics *m, al_outcome outcome, const char *provider,
		    const char *language, uint64_t duration_ms)
{
	const char *p = provider ? provider : "";
	const char *l = language ? language : "";
	pthread_mutex_lock(&m->lock);
	counter *c = m->counters;
	while (c && !(c->outcome == outcome && strcmp(c->provider, p) == 0 &&
		      strcmp(c->language, l) == 0))
		c = c->next;
	if (!c && (c = calloc(1, sizeof(*c)))) {
		c->outcome = outcome;
		c->provider = strdup(p);
		c->language = strdup(l);
		if (!c->provider || !c->language) {
			free(c->provider);
			free(c->language);
			free(c);
			c = NULL;
		} else {
			c->next = m->counters;
			m->counters = c;
		}
	}
	if (c)
		c->count++;
	size_t b = 0;
	while (b < N_BUCKETS && duration_ms > buckets_ms[b])
		b++;
	m->bucket[b]++;
	m->duration_sum_ms += duration_ms;
	m->duration_count++;
	pthread_mutex_unlock(&m->lock);
}

void al_metrics_audit_failure(al_metrics *m)
{
	pthread_mutex_lock(&m->lock);
	m->audit_failures++;
	pthread_mutex_unlock(&m->lock);
}

void al_metrics_audit_record(al_metrics *m, bool full)
{
	pthread_mutex_lock(&m->lock);
	m->audit_records[full ? 1 : 0]++;
	pthread_mutex_unlock(&m->lock);
}

typedef struct sbuf {
	char *s;
	size_t len, cap;
	bool failed;
} sbuf;

__attribute__((format(printf, 2, 3))) static void sb_add(sbuf *b,
							 const char *fmt, ...)
{
	va_list ap;
	if (b->failed)
		return;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(b->s ? b->s + b->len : NULL,
				  b->s ? b->cap - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->failed = true;
			return;
		}
		if (b->s && b->len + (size_t)n < b->cap) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = (b->cap ? b->cap : 1024);
		while (cap < b->len + (size_t)n + 1)
			cap *= 2;
		char *ns = realloc(b->s, cap);
		if (!ns) {
			b->failed = true;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
}

char *al_metrics_render(al_metrics *m, unsigned slots_in_use,
			unsigned slot_waiters, unsigned quarantined)
{
	sbuf b = {0};
	pthread_mutex_lock(&m->lock);
	sb_add(&b, "# HELP airlock_runs_total Requests by outcome, provider "
		   "and language.\n# TYPE airlock_runs_total counter\n");
	for (counter *c = m->counters; c; c = c->next)
		sb_add(&b,
		       "airlock_runs_total{outcome=\"%s\",provider=\"%s\","
		       "language=\"%s\"} %llu\n",
		       al_outcome_name(c->outcome), c->provider, c->language,
		       (unsigned long long)c->count);
	sb_add(&b, "# HELP airlock_run_duration_seconds Time from request to "
		   "result.\n# TYPE airlock_run_duration_seconds histogram\n");
	uint64_t cum = 0;
	for (size_t i = 0; i < N_BUCKETS; i++) {
		cum += m->bucket[i];
		sb_add(&b,
		       "airlock_run_duration_seconds_bucket{le=\"%g\"} %llu\n",
		       (double)buckets_ms[i] / 1000.0, (unsigned long long)cum);
	}
	cum += m->bucket[N_BUCKETS];
	sb_add(&b,
	       "airlock_run_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
	       "airlock_run_duration_seconds_sum %.3f\n"
	       "airlock_run_duration_seconds_count %llu\n",
	       (unsigned long long)cum, (double)m->duration_sum_ms / 1000.0,
	       (unsigned long long)m->duration_count);
	sb_add(&b,
	       "# HELP airlock_slots_in_use Concurrency slots held now.\n"
	       "# TYPE airlock_slots_in_use gauge\nairlock_slots_in_use %u\n"
	       "# HELP airlock_slot_waiters Requests waiting for a slot.\n"
	       "# TYPE airlock_slot_waiters gauge\nairlock_slot_waiters %u\n"
	       "# HELP airlock_audit_write_failures_total Audit records that "
	       "could not be written.\n"
	       "# TYPE airlock_audit_write_failures_total counter\n"
	       "airlock_audit_write_failures_total %llu\n"
	       "# HELP airlock_audit_records_total Audit records committed, "
	       "by whether the commit synced the trail itself.\n"
	       "# TYPE airlock_audit_records_total counter\n"
	       "airlock_audit_records_total{synchronous=\"full\"} %llu\n"
	       "airlock_audit_records_total{synchronous=\"normal\"} %llu\n"
	       "# HELP airlock_quarantined_handles Provider handles whose "
	       "release failed.\n"
	       "# TYPE airlock_quarantined_handles gauge\n"
	       "airlock_quarantined_handles %u\n",
	       slots_in_use, slot_waiters,
	       (unsigned long long)m->audit_failures,
	       (unsigned long long)m->audit_records[1],
	       (unsigned long long)m->audit_records[0], quarantined);
	pthread_mutex_unlock(&m->lock);
	if (b.failed) {
		free(b.s);
		return NULL;
	}
	return b.s;
}
