/* The service's Prometheus counters: runs by outcome, provider and
 * language, a run duration histogram, HTTP answers by status. */
#include <stdarg.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/metrics.h"

static const double buckets[] = {0.01, 0.05, 0.1, 0.25, 0.5, 1,
				 2.5,  5,    10,  30,   60,  300};
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

typedef struct run_series {
	struct run_series *next;
	al_outcome outcome;
	char provider[64];
	char language[32];
	uint64_t count;
} run_series;

/* HTTP statuses 100..599 by hundred and unit. */
#define N_STATUS 600

struct al_srv_metrics {
	pthread_mutex_t lock;
	run_series *series;
	uint64_t bucket_counts[N_BUCKETS]; /* non-cumulative */
	uint64_t duration_count;
	double duration_sum;
	uint64_t http[N_STATUS];
};

al_srv_metrics *al_srv_metrics_new(void)
{
	al_srv_metrics *m = calloc(1, sizeof(*m));
	if (m != NULL)
		pthread_mutex_init(&m->lock, NULL);
	return m;
}

void al_srv_metrics_free(al_srv_metrics *m)
{
	if (m == NULL)
		return;
	while (m->series != NULL) {
		run_series *s = m->series;
		m->series = s->next;
		free(s);
	}
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void al_srv_metrics_run(al_srv_metrics *m, al_outcome outcome,
			const char *provider, const char *language,
			double seconds)
{
	run_series *s;
	pthread_mutex_lock(&m->lock);
	for (s = m->series; s != NULL; s = s->next)
		if (s->outcome == outcome &&
		    strcmp(s->provider, provider) == 0 &&
		    strcmp(s->language, language) == 0)
			break;
	if (s == NULL && (s = calloc(1, sizeof(*s))) != NULL) {
		s->outcome = outcome;
		snprintf(s->provider, sizeof(s->provider), "%s", provider);
		snprintf(s->language, sizeof(s->language), "%s", language);
		s->next = m->series;
		m->series = s;
	}
	if (s != NULL)
		s->count++;
	size_t b = 0;
	while (b < N_BUCKETS && seconds > buckets[b])
		b++;
	if (b < N_BUCKETS)
		m->bucket_counts[b]++;
	m->duration_count++;
	m->duration_sum += seconds;
	pthread_mutex_unlock(&m->lock);
}

void al_srv_metrics_http(al_srv_metrics *m, unsigned status)
{
	if (status >= N_STATUS)
		return;
	pthread_mutex_lock(&m->lock);
	m->http[status]++;
	pthread_mutex_unlock(&m->lock);
}

/* A growable text buffer; on allocation failure it stays failed. */
typedef struct tbuf {
	char *s;
	size_t len, cap;
	int failed;
} tbuf;

__attribute__((format(printf, 2, 3))) static void tb_printf(tbuf *t,
							    const char *fmt,
							    ...)
{
	va_list ap;
	if (t->failed)
		return;
	for (;;) {
		size_t room = t->cap - t->len;
		va_start(ap, fmt);
		int n = vsnprintf(t->s ? t->s + t->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->failed = 1;
			return;
		}
		if ((size_t)n < room) {
			t->len += (size_t)n;
			return;
		}
		size_t cap = (t->cap + (size_t)n + 1) * 2;
		char *p = realloc(t->s, cap);
		if (p == NULL) {
			t->failed = 1;
			return;
		}
		t->s = p;
		t->cap = cap;
	}
}

char *al_srv_metrics_text(al_srv_metrics *m, unsigned runs_active,
			  const char *host_text)
{
	tbuf t = {0};
	pthread_mutex_lock(&m->lock);
	tb_printf(&t, "# HELP airlock_runs_total Runs answered by the "
		      "service, by outcome, provider and language.\n"
		      "# TYPE airlock_runs_total counter\n");
	for (const run_series *s = m->series; s != NULL; s = s->next)
		tb_printf(&t,
			  "airlock_runs_total{outcome=\"%s\",provider=\"%s\","
			  "language=\"%s\"} %llu\n",
			  al_outcome_name(s->outcome), s->provider,
			  s->language, (unsigned long long)s->count);
	tb_printf(&t, "# HELP airlock_run_duration_seconds Time from "
		      "submission to result.\n"
		      "# TYPE airlock_run_duration_seconds histogram\n");
	uint64_t cum = 0;
	for (size_t b = 0; b < N_BUCKETS; b++) {
		cum += m->bucket_counts[b];
		tb_printf(&t,
			  "airlock_run_duration_seconds_bucket{le=\"%g\"} "
			  "%llu\n",
			  buckets[b], (unsigned long long)cum);
	}
	tb_printf(&t,
		  "airlock_run_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
		  "airlock_run_duration_seconds_sum %.6f\n"
		  "airlock_run_duration_seconds_count %llu\n",
		  (unsigned long long)m->duration_count, m->duration_sum,
		  (unsigned long long)m->duration_count);
	tb_printf(&t, "# HELP airlock_runs_active Runs submitted and not "
		      "yet finished.\n"
		      "# TYPE airlock_runs_active gauge\n"
		      "airlock_runs_active %u\n",
		  runs_active);
	tb_printf(&t, "# HELP airlock_http_responses_total HTTP answers by "
		      "status code.\n"
		      "# TYPE airlock_http_responses_total counter\n");
	for (unsigned s = 0; s < N_STATUS; s++)
		if (m->http[s] != 0)
			tb_printf(&t,
				  "airlock_http_responses_total{code=\"%u\"} "
				  "%llu\n",
				  s, (unsigned long long)m->http[s]);
	pthread_mutex_unlock(&m->lock);
	if (host_text != NULL)
		tb_printf(&t, "%s", host_text);
	if (t.failed || t.s == NULL) {
		free(t.s);
		return NULL;
	}
	return t.s;
}
