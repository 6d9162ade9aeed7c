/* Judge0's callback_url (docs/compat.md): once the submission finishes,
 * its default fields are PUT to the URL, retried with backoff (1 s, 2 s,
 * 4 s, ...) until a 2xx answer or the configured tries are spent; each
 * outcome is an audit record.  Only to origins the configuration allows,
 * without following redirects, so a caller cannot aim the daemon at the
 * host's own network.
 *
 * libcurl is loaded with dlopen the first time a callback is made: the
 * service module stays free of libcurl and its dependencies (idle RSS)
 * on a daemon that never calls back, as the remote provider's module
 * does. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/log.h"
#include "core/util.h"
#include "host/admission.h"
#include "providers/curl_lib.h"
#include "server/compat.h"

bool al_compat_callback_allowed(const al_compat_api *api, const char *url,
				char origin[256])
{
	const char *scheme;
	unsigned dflt;
	if (strncasecmp(url, "http://", 7) == 0) {
		scheme = "http";
		dflt = 80;
		url += 7;
	} else if (strncasecmp(url, "https://", 8) == 0) {
		scheme = "https";
		dflt = 443;
		url += 8;
	} else {
		return false;
	}
	size_t n = strcspn(url, "/?#");
	char host[200];
	if (n == 0 || n >= sizeof(host) || memchr(url, '@', n) != NULL)
		return false;
	memcpy(host, url, n);
	host[n] = '\0';
	unsigned port = dflt;
	char *colon = host[0] == '[' ? strstr(host, "]:") : strrchr(host, ':');
	if (colon != NULL) {
		if (host[0] == '[')
			colon++;
		char *end;
		unsigned long p = strtoul(colon + 1, &end, 10);
		if (*end != '\0' || colon[1] == '\0' || p == 0 || p > 65535)
			return false;
		port = (unsigned)p;
		*colon = '\0';
	}
	for (char *c = host; *c != '\0'; c++) {
		if ((unsigned char)*c <= 0x20 || *c == '%' || *c == '\\')
			return false;
		*c = (char)tolower((unsigned char)*c);
	}
	snprintf(origin, 256, "%s://%s:%u", scheme, host, port);
	for (size_t i = 0; i < api->n_callback_allow; i++)
		if (strcmp(api->callback_allow[i], origin) == 0)
			return true;
	return false;
}

/* ---- libcurl, loaded on first use (providers/curl_lib.h) ---------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static bool curl_ready;

static void init_curl(void)
{
	curl_ready = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

/* One PUT: the HTTP status, or 0 when no answer came. */
static long put_once(const char *url, const char *body, unsigned timeout_ms)
{
	CURL *c = curl_easy_init();
	long status = 0;
	if (c == NULL)
		return 0;
	struct curl_slist *h =
		curl_slist_append(NULL, "Content-Type: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT");
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return status;
}

/* ---- the callback threads ---------------------------------------------- */

static pthread_mutex_t cb_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cb_cond = PTHREAD_COND_INITIALIZER;
static unsigned cb_active;
static bool cb_stopping;

typedef struct callback {
	al_service *svc;
	char *tenant, *principal, *url;
	char token[40];
	bool b64;
	unsigned tries, timeout_ms;
} callback;

static void callback_free(callback *cb)
{
	free(cb->tenant);
	free(cb->principal);
	free(cb->url);
	free(cb);
}

/* Waits until the run is done; false when the service closes first. */
static bool wait_done(callback *cb)
{
	al_service *svc = cb->svc;
	al_srv_run *run = al_service_find(svc, cb->tenant, cb->token);
	bool done = true;
	if (run == NULL)
		return true; /* only the disk knows it: finished */
	pthread_mutex_lock(&svc->lock);
	while (run->state != AL_SRV_RUN_DONE && !svc->closing)
		pthread_cond_wait(&run->changed, &svc->lock);
	done = run->state == AL_SRV_RUN_DONE;
	pthread_mutex_unlock(&svc->lock);
	al_service_run_put(svc, run);
	return done;
}

static void audit(callback *cb, const char *event, unsigned attempts,
		  long status)
{
	char origin[256] = "";
	al_compat_api any = {.callback_allow = NULL};
	(void)al_compat_callback_allowed(&any, cb->url, origin);
	json_t *rec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I}",
				"event", event, "run_id", cb->token, "tenant",
				cb->tenant, "principal", cb->principal,
				"destination", origin, "attempts",
				(json_int_t)attempts, "http_status",
				(json_int_t)status);
	al_srv_gen *gen = al_service_gen_get(cb->svc);
	al_error *err = NULL;
	if (rec == NULL || gen == NULL ||
	    al_host_audit_event(gen->host, rec, &err) < 0)
		al_logf(AL_LOG_WARN, cb->token, "callback %s not audited",
			event);
	al_error_free(err);
	al_service_gen_put(cb->svc, gen);
	json_decref(rec);
}

/* Sleeps ms unless the service stops first (then false). */
static bool backoff(unsigned ms)
{
	struct timespec ts;
	al_deadline(CLOCK_REALTIME, &ts, ms);
	pthread_mutex_lock(&cb_lock);
	int rc = 0;
	while (!cb_stopping && rc == 0)
		rc = pthread_cond_timedwait(&cb_cond, &cb_lock, &ts);
	bool go_on = !cb_stopping;
	pthread_mutex_unlock(&cb_lock);
	return go_on;
}

static void *callback_main(void *arg)
{
	callback *cb = arg;
	unsigned attempts = 0;
	long status = 0;
	if (wait_done(cb)) {
		pthread_once(&curl_once, init_curl);
		json_t *body = al_compat_judge0_body(cb->svc, cb->tenant,
						     cb->token, cb->b64);
		char *text = body ? json_dumps(body, JSON_COMPACT |
							     JSON_PRESERVE_ORDER)
				  : NULL;
		json_decref(body);
		for (unsigned ms = 1000; text != NULL && curl_ready &&
					 attempts < cb->tries;
		     ms *= 2) {
			status = put_once(cb->url, text, cb->timeout_ms);
			attempts++;
			if ((status >= 200 && status < 300) ||
			    attempts == cb->tries || !backoff(ms))
				break;
		}
		free(text);
		audit(cb,
		      status >= 200 && status < 300 ? "callback.delivered"
						    : "callback.failed",
		      attempts, status);
	}
	callback_free(cb);
	pthread_mutex_lock(&cb_lock);
	cb_active--;
	pthread_cond_broadcast(&cb_cond);
	pthread_mutex_unlock(&cb_lock);
	return NULL;
}

int al_compat_callback_start(al_service *svc, const char *tenant,
			     const char *principal, const char *token,
			     const char *url, bool b64, unsigned tries,
			     unsigned timeout_ms)
{
	callback *cb = calloc(1, sizeof(*cb));
	if (cb == NULL)
		return -ENOMEM;
	*cb = (callback){.svc = svc, .tenant = strdup(tenant),
			 .principal = strdup(principal), .url = strdup(url),
			 .b64 = b64, .tries = tries, .timeout_ms = timeout_ms};
	snprintf(cb->token, sizeof(cb->token), "%s", token);
	pthread_attr_t attr;
	pthread_t t;
	int rc = -ENOMEM;
	if (cb->tenant && cb->principal && cb->url &&
	    pthread_attr_init(&attr) == 0) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_mutex_lock(&cb_lock);
		cb_stopping = false;
		cb_active++;
		rc = pthread_create(&t, &attr, callback_main, cb) == 0 ? 0
								      : -EAGAIN;
		if (rc < 0)
			cb_active--;
		pthread_mutex_unlock(&cb_lock);
		pthread_attr_destroy(&attr);
	}
	if (rc < 0)
		callback_free(cb);
	return rc;
}

void al_compat_callbacks_stop(void)
{
	pthread_mutex_lock(&cb_lock);
	cb_stopping = true;
	pthread_cond_broadcast(&cb_cond);
	while (cb_active > 0)
		pthread_cond_wait(&cb_cond, &cb_lock);
	pthread_mutex_unlock(&cb_lock);
}
