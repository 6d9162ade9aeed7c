/* The anonymous tenant's request rate (docs/compat.md): a fixed window of
 * rate_per_s seconds holding at most rate_requests requests, one window
 * per API.  Kept across reloads; a changed rate applies from the next
 * window. */
#include <pthread.h>
#include <time.h>

#include "server/compat.h"

static pthread_mutex_t rate_lock = PTHREAD_MUTEX_INITIALIZER;
static struct window {
	int64_t start_s;
	unsigned used;
} windows[AL_COMPAT_V1 + 1];

unsigned al_compat_rate_take(al_compat_kind kind, const al_compat_api *api)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t now = ts.tv_sec;
	unsigned wait = 0;
	pthread_mutex_lock(&rate_lock);
	struct window *w = &windows[kind];
	if (w->start_s == 0 || now - w->start_s >= (int64_t)api->rate_per_s) {
		w->start_s = now;
		w->used = 0;
	}
	if (w->used < api->rate_requests)
		w->used++;
	else
		wait = (unsigned)(w->start_s + api->rate_per_s - now);
	pthread_mutex_unlock(&rate_lock);
	return wait;
}
