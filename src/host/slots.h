/* Internal: concurrency slots, global and per tenant, FIFO among waiters. */
#ifndef AL_HOST_SLOTS_H
#define AL_HOST_SLOTS_H

#include <stdint.h>

#include <airlock/provider.h>

typedef struct al_slots al_slots;

al_slots *al_slots_new(unsigned global_max);
/* Frees the table; every slot must have been released. */
void al_slots_free(al_slots *s);
/* Waits at most wait_ms (FIFO among waiters) for a slot of `tenant`
 * (tenant_max 0: only the global quota).  Returns 0 with a slot held,
 * -EBUSY when the wait ran out, -ECANCELED when `cancel` fired first. */
int al_slots_acquire(al_slots *s, const char *tenant, unsigned tenant_max,
		     uint64_t wait_ms, const al_cancel *cancel);
void al_slots_release(al_slots *s, const char *tenant);
void al_slots_stats(al_slots *s, unsigned *in_use, unsigned *waiters);

#endif
