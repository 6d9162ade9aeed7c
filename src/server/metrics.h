/* Internal: the service's Prometheus counters (docs/serve.md, "Metrics"). */
#ifndef AL_SERVER_METRICS_H
#define AL_SERVER_METRICS_H

#include "server/idle_pool.h"

typedef struct al_srv_metrics al_srv_metrics;

al_srv_metrics *al_srv_metrics_new(void);
void al_srv_metrics_free(al_srv_metrics *m);
void al_srv_metrics_http(al_srv_metrics *m, unsigned status);
/* Prometheus text exposition.  runs_active: runs not yet finished.
 * idle: the idle supervisors' figures (NULL: none).
 * host_text: the host's own metrics text appended as is (may be NULL).
 * Caller frees; NULL on allocation failure. */
char *al_srv_metrics_text(al_srv_metrics *m, unsigned runs_active,
			  const al_idle_stats *idle, const char *host_text);

#endif
