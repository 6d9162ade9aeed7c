/* Internal: the host's counters, rendered as Prometheus text. */
#ifndef AL_HOST_METRICS_H
#define AL_HOST_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include <airlock/contract.h>

typedef struct al_metrics al_metrics;

al_metrics *al_metrics_new(void);
void al_metrics_free(al_metrics *m);
/* One finished request (refusals included).  provider/language may be
 * NULL ("" label). */
void al_metrics_run(al_metrics *m, al_outcome outcome, const char *provider,
		    const char *language, uint64_t duration_ms);
void al_metrics_audit_failure(al_metrics *m);
/* One audit record committed; full: with its own sync (synchronous=FULL). */
void al_metrics_audit_record(al_metrics *m, bool full);
/* Prometheus text exposition; caller frees.  NULL on allocation failure. */
char *al_metrics_render(al_metrics *m, unsigned slots_in_use,
			unsigned slot_waiters, unsigned quarantined);

#endif
