/* Request-rate limits: fixed windows of per_s seconds holding at most
 * `requests` requests, one window per key (a tenant, or an API's
 * anonymous callers).  The table is bounded: keys come from the
 * configuration, and past MAX_KEYS the window that started longest ago
 * is reused.  Windows survive reloads; a changed rate applies from the
 * next window. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "host/config.h"
#include "server/rate.h"

#define MAX_KEYS 1024u

static pthread_mutex_t rate_lock = PTHREAD_MUTEX_INITIALIZER;
static struct window {
	char key[80];
	int64_t start_s;
	unsigned used;
} windows[MAX_KEYS];

unsigned al_srv_rate_take(const char *key, unsigned requests, unsigned per_s)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t now = ts.tv_sec;
	unsigned wait = 0;
	pthread_mutex_lock(&rate_lock);
	struct window *w = NULL, *oldest = &windows[0];
	for (size_t i = 0; i < MAX_KEYS && w == NULL; i++) {
		if (strcmp(windows[i].key, key) == 0)
			w = &windows[i];
		else if (windows[i].start_s < oldest->start_s)
			oldest = &windows[i];
	}
	if (w == NULL) {
		w = oldest;
		snprintf(w->key, sizeof(w->key), "%s", key);
		w->start_s = 0;
	}
	if (w->start_s == 0 || now - w->start_s >= (int64_t)per_s) {
		w->start_s = now > 0 ? now : 1;
		w->used = 0;
	}
	if (w->used < requests)
		w->used++;
	else
		wait = (unsigned)(w->start_s + per_s - now);
	pthread_mutex_unlock(&rate_lock);
	return wait;
}

unsigned al_srv_tenant_rate(al_service *svc, const char *tenant)
{
	unsigned requests = 0, per_s = 0;
	al_srv_gen *gen = al_service_gen_get(svc);
	const al_cfg_tenant *t = gen ? al_config_tenant(gen->cfg, tenant) : NULL;
	if (t != NULL) {
		requests = t->rate_requests;
		per_s = t->rate_per_s;
	}
	al_service_gen_put(svc, gen);
	if (requests == 0)
		return 0;
	char key[80];
	snprintf(key, sizeof(key), "tenant:%s", tenant);
	return al_srv_rate_take(key, requests, per_s);
}
