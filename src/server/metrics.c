/* The service's own Prometheus series (HTTP answers by status, runs in
 * flight in all and per tenant, descriptors, memory and connections); the
 * run counters, duration histogram, slots and audit failures come from the
 * host (al_host_metrics_text) and are appended as is.  Every family has
 * HELP and TYPE (the text format's lint, promtool check metrics). */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <sys/resource.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/config.h"
#include "server/metrics.h"
#include "server/service.h"

/* Counted HTTP statuses: 0..599. */
#define N_STATUS 600

struct al_srv_metrics {
	pthread_mutex_t lock;
	uint64_t http[N_STATUS];
	unsigned records_pending;
	uint64_t rate_limited; /* compat anonymous requests refused (429) */
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
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void al_srv_metrics_http(al_srv_metrics *m, unsigned status)
{
	if (status >= N_STATUS)
		return;
	pthread_mutex_lock(&m->lock);
	m->http[status]++;
	pthread_mutex_unlock(&m->lock);
}

void al_srv_fd_usage(unsigned *open, unsigned *limit)
{
	struct rlimit rl;
	unsigned n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (d != NULL) {
		const struct dirent *de;
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] != '.')
				n++;
		closedir(d);
		if (n > 0)
			n--; /* the directory's own descriptor */
	}
	*open = n;
	*limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
				 rl.rlim_cur != RLIM_INFINITY &&
				 rl.rlim_cur <= UINT32_MAX
			 ? (unsigned)rl.rlim_cur
			 : 0;
}

uint64_t al_srv_resident_bytes(void)
{
	/* statm: size resident shared ..., in pages. */
	unsigned long long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");
	if (f == NULL)
		return 0;
	int got = fscanf(f, "%llu %llu", &size, &resident);
	fclose(f);
	long page = sysconf(_SC_PAGESIZE);
	if (got != 2 || page <= 0)
		return 0;
	return (uint64_t)resident * (uint64_t)page;
}

/* Adds delta to tenant's entry, appending one when absent. */
static int tenant_add(al_srv_tenant_runs **v, size_t *n, size_t *cap,
		      const char *tenant, unsigned delta)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i].tenant, tenant) == 0) {
			(*v)[i].running += delta;
			return 0;
		}
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		al_srv_tenant_runs *p = realloc(*v, c * sizeof(*p));
		if (p == NULL)
			return -ENOMEM;
		*v = p;
		*cap = c;
	}
	char *name = strdup(tenant);
	if (name == NULL)
		return -ENOMEM;
	(*v)[(*n)++] = (al_srv_tenant_runs){.tenant = name, .running = delta};
	return 0;
}

int al_srv_tenant_runs_collect(struct al_service *svc,
			       const struct al_srv_gen *gen,
			       al_srv_tenant_runs **out, size_t *n)
{
	al_srv_tenant_runs *v = NULL;
	size_t cap = 0;
	int rc = 0;
	*n = 0;
	/* The configured tenants are bounded by the configuration; a run's
	 * tenant is one of them (or of the configuration it started under,
	 * before a reload). */
	if (gen != NULL && gen->cfg != NULL)
		for (size_t i = 0; rc == 0 && i < gen->cfg->n_tenants; i++)
			rc = tenant_add(&v, n, &cap, gen->cfg->tenants[i].name,
					0);
	pthread_mutex_lock(&svc->lock);
	for (const al_srv_run *r = svc->newest; rc == 0 && r != NULL;
	     r = r->older)
		if (r->state == AL_SRV_RUN_RUNNING && r->tenant != NULL)
			rc = tenant_add(&v, n, &cap, r->tenant, 1);
	pthread_mutex_unlock(&svc->lock);
	if (rc < 0) {
		al_srv_tenant_runs_free(v, *n);
		*n = 0;
		v = NULL;
	}
	*out = v;
	return rc;
}

void al_srv_tenant_runs_free(al_srv_tenant_runs *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].tenant);
	free(v);
}

void al_srv_metrics_pending(al_srv_metrics *m, int delta)
{
	pthread_mutex_lock(&m->lock);
	if (delta > 0 || m->records_pending > 0)
		m->records_pending = (unsigned)((int)m->records_pending + delta);
	pthread_mutex_unlock(&m->lock);
}

void al_srv_metrics_rate_limited(al_srv_metrics *m)
{
	pthread_mutex_lock(&m->lock);
	m->rate_limited++;
	pthread_mutex_unlock(&m->lock);
}

unsigned al_srv_metrics_pending_count(al_srv_metrics *m)
{
	pthread_mutex_lock(&m->lock);
	unsigned n = m->records_pending;
	pthread_mutex_unlock(&m->lock);
	return n;
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

/* A label value in the text format: backslash, quote and newline
 * escaped.  Tenant names are configuration names; escaping keeps the
 * exposition valid whatever the operator chose. */
static void tb_label(tbuf *t, const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\' || *v == '"')
			tb_printf(t, "\\%c", *v);
		else if (*v == '\n')
			tb_printf(t, "\\n");
		else
			tb_printf(t, "%c", *v);
	}
}

char *al_srv_metrics_text(al_srv_metrics *m, unsigned runs_active,
			  const al_idle_stats *idle,
			  const al_srv_process_stats *ps,
			  const al_srv_tenant_runs *tenants, size_t n_tenants,
			  const char *host_text)
{
	tbuf t = {0};
	pthread_mutex_lock(&m->lock);
	tb_printf(&t, "# HELP airlock_api_runs_in_flight Runs submitted through "
		      "the API and not yet finished.\n"
		      "# TYPE airlock_api_runs_in_flight gauge\n"
		      "airlock_api_runs_in_flight %u\n",
		  runs_active);
	tb_printf(&t, "# HELP airlock_tenant_runs_in_flight Runs not yet "
		      "finished, per tenant.\n"
		      "# TYPE airlock_tenant_runs_in_flight gauge\n");
	for (size_t i = 0; i < n_tenants; i++) {
		tb_printf(&t, "airlock_tenant_runs_in_flight{tenant=\"");
		tb_label(&t, tenants[i].tenant);
		tb_printf(&t, "\"} %u\n", tenants[i].running);
	}
	tb_printf(&t, "# HELP airlock_api_responses_total HTTP answers by "
		      "status code.\n"
		      "# TYPE airlock_api_responses_total counter\n");
	for (unsigned s = 0; s < N_STATUS; s++)
		if (m->http[s] != 0)
			tb_printf(&t,
				  "airlock_api_responses_total{code=\"%u\"} "
				  "%llu\n",
				  s, (unsigned long long)m->http[s]);
	/* Durability (docs/durability.md, "A full disk"). */
	tb_printf(&t, "# HELP airlock_records_pending Finished runs whose "
		      "result is known but not yet durably recorded (the "
		      "disk is full); retried until it is.\n"
		      "# TYPE airlock_records_pending gauge\n"
		      "airlock_records_pending %u\n",
		  m->records_pending);
	tb_printf(&t, "# HELP airlock_rate_limited_total Requests refused "
		      "by a request-rate limit (429).\n"
		      "# TYPE airlock_rate_limited_total counter\n"
		      "airlock_rate_limited_total %llu\n",
		  (unsigned long long)m->rate_limited);
	pthread_mutex_unlock(&m->lock);
	if (idle != NULL)
		tb_printf(&t,
			  "# HELP airlock_idle_supervisors Idle supervisors "
			  "waiting for a run (warm: holding a language's warm "
			  "sandbox).\n"
			  "# TYPE airlock_idle_supervisors gauge\n"
			  "airlock_idle_supervisors{kind=\"generic\"} %u\n"
			  "airlock_idle_supervisors{kind=\"warm\"} %u\n"
			  "# HELP airlock_idle_supervisors_wanted Idle "
			  "supervisors kept now (warm: every language's): the "
			  "configured number, grown while runs found every one "
			  "in use.\n"
			  "# TYPE airlock_idle_supervisors_wanted gauge\n"
			  "airlock_idle_supervisors_wanted{kind=\"generic\"} "
			  "%u\n"
			  "airlock_idle_supervisors_wanted{kind=\"warm\"} %u\n"
			  "# HELP airlock_supervisor_launches_total Runs by how "
			  "their supervisor started.\n"
			  "# TYPE airlock_supervisor_launches_total counter\n"
			  "airlock_supervisor_launches_total{how=\"handoff\"} "
			  "%llu\n"
			  "airlock_supervisor_launches_total{how="
			  "\"handoff_warm\"} %llu\n"
			  "airlock_supervisor_launches_total{how=\"cold\"} "
			  "%llu\n"
			  "# HELP airlock_idle_supervisors_started_total Idle "
			  "supervisors started (failed: never ready).\n"
			  "# TYPE airlock_idle_supervisors_started_total "
			  "counter\n"
			  "airlock_idle_supervisors_started_total %llu\n"
			  "# HELP airlock_idle_supervisors_failed_total Idle "
			  "supervisors that failed before they were ready.\n"
			  "# TYPE airlock_idle_supervisors_failed_total "
			  "counter\n"
			  "airlock_idle_supervisors_failed_total %llu\n"
			  "# HELP airlock_idle_supervisors_reused_total Idle "
			  "supervisors ready for another run after serving "
			  "one.\n"
			  "# TYPE airlock_idle_supervisors_reused_total "
			  "counter\n"
			  "airlock_idle_supervisors_reused_total %llu\n",
			  idle->ready - idle->ready_warm, idle->ready_warm,
			  idle->wanted_generic, idle->wanted_warm,
			  (unsigned long long)(idle->handoffs -
					       idle->handoffs_warm),
			  (unsigned long long)idle->handoffs_warm,
			  (unsigned long long)idle->cold,
			  (unsigned long long)idle->spawned,
			  (unsigned long long)idle->failed,
			  (unsigned long long)idle->reused);
	if (ps != NULL)
		tb_printf(&t,
			  "# HELP airlock_api_open_fds Descriptors the daemon "
			  "holds open.\n"
			  "# TYPE airlock_api_open_fds gauge\n"
			  "airlock_api_open_fds %u\n"
			  "# HELP airlock_api_max_fds The daemon's descriptor "
			  "limit (RLIMIT_NOFILE).\n"
			  "# TYPE airlock_api_max_fds gauge\n"
			  "airlock_api_max_fds %u\n"
			  "# HELP airlock_api_connections Open HTTP "
			  "connections.\n"
			  "# TYPE airlock_api_connections gauge\n"
			  "airlock_api_connections %u\n"
			  "# HELP airlock_api_max_connections Connections "
			  "accepted at most, per listener.\n"
			  "# TYPE airlock_api_max_connections gauge\n"
			  "airlock_api_max_connections %u\n"
			  "# HELP airlock_api_connection_timeouts_total "
			  "Connections closed for a request too slow to "
			  "arrive.\n"
			  "# TYPE airlock_api_connection_timeouts_total "
			  "counter\n"
			  "airlock_api_connection_timeouts_total{phase="
			  "\"headers\"} %llu\n"
			  "airlock_api_connection_timeouts_total{phase="
			  "\"body\"} %llu\n"
			  "# HELP process_resident_memory_bytes Resident "
			  "memory size in bytes.\n"
			  "# TYPE process_resident_memory_bytes gauge\n"
			  "process_resident_memory_bytes %llu\n",
			  ps->open_fds, ps->max_fds, ps->connections,
			  ps->max_connections,
			  (unsigned long long)ps->header_timeouts,
			  (unsigned long long)ps->body_timeouts,
			  (unsigned long long)ps->resident_bytes);
	if (ps != NULL)
		tb_printf(&t,
			  "# HELP airlock_run_dirs_total Durable runs by "
			  "whether their directory was made ahead "
			  "(docs/durability.md, \"Run directories made "
			  "ahead\").\n"
			  "# TYPE airlock_run_dirs_total counter\n"
			  "airlock_run_dirs_total{how=\"ahead\"} %llu\n"
			  "airlock_run_dirs_total{how=\"on_admission\"} "
			  "%llu\n",
			  ps->spare_dirs_taken, ps->spare_dirs_missed);
	if (host_text != NULL)
		tb_printf(&t, "%s", host_text);
	if (t.failed || t.s == NULL) {
		free(t.s);
		return NULL;
	}
	return t.s;
}
