/* Internal: the service's Prometheus counters (docs/serve.md, "Metrics"). */
#ifndef AL_SERVER_METRICS_H
#define AL_SERVER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "server/idle_pool.h"

typedef struct al_srv_metrics al_srv_metrics;

al_srv_metrics *al_srv_metrics_new(void);
void al_srv_metrics_free(al_srv_metrics *m);
void al_srv_metrics_http(al_srv_metrics *m, unsigned status);
/* A request refused by a request-rate limit. */
void al_srv_metrics_rate_limited(al_srv_metrics *m);

/* The daemon's descriptors and connections (docs/serve.md, "Metrics"). */
typedef struct al_srv_process_stats {
	unsigned open_fds, max_fds; /* now; RLIMIT_NOFILE (soft) */
	unsigned connections, max_connections; /* open; the bound */
	uint64_t header_timeouts, body_timeouts;
	uint64_t resident_bytes; /* resident memory (RSS) */
	/* run directories taken ready-made; runs that found none */
	unsigned long long spare_dirs_taken, spare_dirs_missed;
} al_srv_process_stats;

/* Counts the process's open descriptors (its /proc/self/fd entries) and
 * reads its descriptor limit; 0 for what cannot be read. */
void al_srv_fd_usage(unsigned *open, unsigned *limit);

/* Runs in flight of one tenant (docs/api.md, "Metrics"). */
typedef struct al_srv_tenant_runs {
	char *tenant;
	unsigned running;
} al_srv_tenant_runs;

struct al_service;
struct al_srv_gen;
/* Every tenant gen configures (0 runs included, so its series exists
 * before its first run) and every tenant with a run not yet finished.
 * Takes the service lock.  *out: caller frees with
 * al_srv_tenant_runs_free.  0, or -ENOMEM. */
int al_srv_tenant_runs_collect(struct al_service *svc,
			       const struct al_srv_gen *gen,
			       al_srv_tenant_runs **out, size_t *n);
void al_srv_tenant_runs_free(al_srv_tenant_runs *v, size_t n);

/* The process's resident memory in bytes (/proc/self/statm); 0 when it
 * cannot be read. */
uint64_t al_srv_resident_bytes(void);

/* Results known but not yet durably recorded (a full disk): delta +1
 * when one starts waiting, -1 when it is recorded or given up. */
void al_srv_metrics_pending(al_srv_metrics *m, int delta);
unsigned al_srv_metrics_pending_count(al_srv_metrics *m);
/* Prometheus text exposition.  runs_active: runs not yet finished.
 * idle: the idle supervisors' figures (NULL: none).
 * ps: descriptors and connections (NULL: none).
 * tenants, n_tenants: runs in flight per tenant.
 * host_text: the host's own metrics text appended as is (may be NULL).
 * Caller frees; NULL on allocation failure. */
char *al_srv_metrics_text(al_srv_metrics *m, unsigned runs_active,
			  const al_idle_stats *idle,
			  const al_srv_process_stats *ps,
			  const al_srv_tenant_runs *tenants, size_t n_tenants,
			  const char *host_text);

#endif
