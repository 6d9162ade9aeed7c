/* Internal: live runs of one provider handle, by run id, so interrupt()
 * can reach the run's cancel token.  Thread-safe. */
#ifndef AL_CORE_RUN_REGISTRY_H
#define AL_CORE_RUN_REGISTRY_H

#include <pthread.h>

#include <airlock/error.h>
#include <airlock/provider.h>

typedef struct al_run_entry {
	struct al_run_entry *next;
	char run_id[40];
	al_cancel *cancel;
} al_run_entry;

typedef struct al_run_registry {
	pthread_mutex_t lock;
	al_run_entry *head;
} al_run_registry;

#define AL_RUN_REGISTRY_INIT {PTHREAD_MUTEX_INITIALIZER, NULL}

void al_run_registry_init(al_run_registry *reg);
void al_run_registry_destroy(al_run_registry *reg);
/* entry is caller-owned (e.g. on the executing thread's stack). */
void al_run_registry_add(al_run_registry *reg, al_run_entry *entry,
			 const char *run_id, al_cancel *cancel);
void al_run_registry_remove(al_run_registry *reg, al_run_entry *entry);
/* Fires AL_CANCEL_INTERRUPTED on the run; -ESRCH when not live. */
int al_run_registry_interrupt(al_run_registry *reg, const char *run_id);
size_t al_run_registry_count(al_run_registry *reg);

/* A provider's interrupt(): fires the run's token, or fills *err
 * (AL_ERR_NOT_FOUND) and returns -ESRCH when the run is not live. */
int al_run_registry_interrupt_run(al_run_registry *reg, const char *run_id,
				  al_error **err);
/* A provider's release() may go on only with no run live: -EBUSY and
 * *err (AL_ERR_INTERNAL) otherwise. */
int al_run_registry_check_idle(al_run_registry *reg, al_error **err);

#endif
