/* Live runs of one provider handle (see run_registry.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/run_registry.h"

void al_run_registry_init(al_run_registry *reg)
{
	pthread_mutex_init(&reg->lock, NULL);
	reg->head = NULL;
}

void al_run_registry_destroy(al_run_registry *reg)
{
	pthread_mutex_destroy(&reg->lock);
}

void al_run_registry_add(al_run_registry *reg, al_run_entry *entry,
			 const char *run_id, al_cancel *cancel)
{
	snprintf(entry->run_id, sizeof(entry->run_id), "%s",
		 run_id != NULL ? run_id : "");
	entry->cancel = cancel;
	pthread_mutex_lock(&reg->lock);
	entry->next = reg->head;
	reg->head = entry;
	pthread_mutex_unlock(&reg->lock);
}

void al_run_registry_remove(al_run_registry *reg, al_run_entry *entry)
{
	pthread_mutex_lock(&reg->lock);
	for (al_run_entry **p = &reg->head; *p != NULL; p = &(*p)->next) {
		if (*p == entry) {
			*p = entry->next;
			break;
		}
	}
	pthread_mutex_unlock(&reg->lock);
}

int al_run_registry_interrupt(al_run_registry *reg, const char *run_id)
{
	int rc = -ESRCH;
	pthread_mutex_lock(&reg->lock);
	for (al_run_entry *e = reg->head; e != NULL; e = e->next) {
		if (run_id != NULL && strcmp(e->run_id, run_id) == 0) {
			al_cancel_fire(e->cancel, AL_CANCEL_INTERRUPTED);
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&reg->lock);
	return rc;
}

size_t al_run_registry_count(al_run_registry *reg)
{
	size_t n = 0;
	pthread_mutex_lock(&reg->lock);
	for (al_run_entry *e = reg->head; e != NULL; e = e->next)
		n++;
	pthread_mutex_unlock(&reg->lock);
	return n;
}

int al_run_registry_interrupt_run(al_run_registry *reg, const char *run_id,
				  al_error **err)
{
	if (al_run_registry_interrupt(reg, run_id) < 0)
		return al_error_set(err, AL_ERR_NOT_FOUND, ESRCH, NULL,
				    "no such live run");
	return 0;
}

int al_run_registry_check_idle(al_run_registry *reg, al_error **err)
{
	if (al_run_registry_count(reg) != 0)
		return al_error_set(err, AL_ERR_INTERNAL, EBUSY, NULL,
				    "runs are still live on this handle");
	return 0;
}
