/* Judge0 submissions' own fields (docs/compat.md): what the run's result
 * does not carry (expected_output, the source as sent, the limits asked
 * for, redirect_stderr_to_stdout...), kept per token (the run id) for the
 * reads that follow.  Bounded: the oldest entries go first; a token the
 * table forgot still reads from the run's result, without those fields. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "server/compat.h"

#define MAX_ENTRIES 4096u
#define MAX_BYTES (64u << 20)

typedef struct entry {
	char token[40];
	char *tenant;
	json_t *sub;
	size_t bytes;
} entry;

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static entry entries[MAX_ENTRIES];
static size_t head, count, total_bytes; /* ring: oldest at head */

static void drop_oldest(void)
{
	entry *e = &entries[head];
	total_bytes -= e->bytes;
	free(e->tenant);
	json_decref(e->sub);
	*e = (entry){0};
	head = (head + 1) % MAX_ENTRIES;
	count--;
}

void al_compat_store_put(const char *tenant, const char *token, json_t *sub,
			 size_t bytes)
{
	char *t = strdup(tenant);
	if (t == NULL)
		return;
	pthread_mutex_lock(&store_lock);
	while (count > 0 &&
	       (count == MAX_ENTRIES || total_bytes + bytes > MAX_BYTES))
		drop_oldest();
	entry *e = &entries[(head + count) % MAX_ENTRIES];
	snprintf(e->token, sizeof(e->token), "%s", token);
	e->tenant = t;
	e->sub = json_incref(sub);
	e->bytes = bytes;
	total_bytes += bytes;
	count++;
	pthread_mutex_unlock(&store_lock);
}

json_t *al_compat_store_get(const char *tenant, const char *token)
{
	json_t *sub = NULL;
	pthread_mutex_lock(&store_lock);
	for (size_t i = 0; i < count && sub == NULL; i++) {
		entry *e = &entries[(head + i) % MAX_ENTRIES];
		if (strcmp(e->token, token) == 0 &&
		    strcmp(e->tenant, tenant) == 0)
			sub = json_deep_copy(e->sub);
	}
	pthread_mutex_unlock(&store_lock);
	return sub;
}

void al_compat_store_add_run(const char *tenant, const char *token,
			     const char *run_id)
{
	pthread_mutex_lock(&store_lock);
	for (size_t i = 0; i < count; i++) {
		entry *e = &entries[(head + i) % MAX_ENTRIES];
		if (strcmp(e->token, token) != 0 ||
		    strcmp(e->tenant, tenant) != 0)
			continue;
		json_t *runs = json_object_get(e->sub, "_runs");
		if (run_id == NULL)
			json_object_set_new(e->sub, "_repeat_done",
					    json_true());
		else if (json_is_array(runs))
			json_array_append_new(runs, json_string(run_id));
		break;
	}
	pthread_mutex_unlock(&store_lock);
}

void al_compat_store_clear(void)
{
	pthread_mutex_lock(&store_lock);
	while (count > 0)
		drop_oldest();
	pthread_mutex_unlock(&store_lock);
}
