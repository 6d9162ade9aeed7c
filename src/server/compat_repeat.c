/* Judge0's number_of_runs (docs/compat.md): a submission runs its
 * program up to N times, one run after the other, each an ordinary
 * airlock run (admitted, audited and listed as any other).  As Judge0,
 * the runs stop at the first one that is not Accepted.  The token is the
 * first run's id; the submission's own fields record every run's id
 * ("_runs") and, once the sequence is over, "_repeat_done", so that a
 * read answers Processing until then and the averaged figures after.
 * A callback goes out once the sequence is over. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "server/compat.h"

static pthread_mutex_t rp_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rp_cond = PTHREAD_COND_INITIALIZER;
static unsigned rp_active;

/* Waits until the run is done; false when the service closes first. */
static bool wait_done(al_service *svc, const char *tenant, const char *id)
{
	al_srv_run *run = al_service_find(svc, tenant, id);
	if (run == NULL)
		return true; /* only the disk knows it: finished */
	pthread_mutex_lock(&svc->lock);
	while (run->state != AL_SRV_RUN_DONE && !svc->closing)
		pthread_cond_wait(&run->changed, &svc->lock);
	bool done = run->state == AL_SRV_RUN_DONE;
	pthread_mutex_unlock(&svc->lock);
	al_service_run_put(svc, run);
	return done;
}

static void free_repeat(al_compat_repeat *r)
{
	free(r->tenant);
	free(r->principal);
	free(r->cb_url);
	json_decref(r->req);
	free(r);
}

void al_compat_repeat_run(al_compat_repeat *r)
{
	char cur[40];
	snprintf(cur, sizeof(cur), "%s", r->token);
	for (unsigned n = 1; n < r->runs; n++) {
		if (!wait_done(r->svc, r->tenant, cur) ||
		    !al_compat_judge0_accepted(r->svc, r->tenant, r->token,
					       cur))
			break;
		al_compat_out o;
		int rc = al_compat_run(r->svc, r->tenant, r->principal, r->req,
				       false, &o);
		if (rc == 0 && o.run_id[0] != '\0') {
			snprintf(cur, sizeof(cur), "%s", o.run_id);
			al_compat_store_add_run(r->tenant, r->token, cur);
		}
		al_compat_out_clear(&o);
		if (rc < 0)
			break;
	}
	/* The sequence is over once its last run is. */
	if (wait_done(r->svc, r->tenant, cur))
		al_compat_store_add_run(r->tenant, r->token, NULL);
}

static void *repeat_main(void *arg)
{
	al_compat_repeat *r = arg;
	al_compat_repeat_run(r);
	if (r->cb_url != NULL &&
	    al_compat_callback_start(r->svc, r->tenant, r->principal, r->token,
				     r->cb_url, r->b64, r->cb_tries,
				     r->cb_timeout_ms) < 0)
		al_logf(AL_LOG_WARN, r->token, "callback thread not started");
	free_repeat(r);
	pthread_mutex_lock(&rp_lock);
	rp_active--;
	pthread_cond_broadcast(&rp_cond);
	pthread_mutex_unlock(&rp_lock);
	return NULL;
}

al_compat_repeat *al_compat_repeat_new(al_service *svc, const char *tenant,
				       const char *principal,
				       const char *token, const json_t *req,
				       unsigned runs)
{
	al_compat_repeat *r = calloc(1, sizeof(*r));
	if (r == NULL)
		return NULL;
	r->svc = svc;
	r->tenant = strdup(tenant);
	r->principal = strdup(principal);
	r->req = json_deep_copy(req);
	r->runs = runs;
	snprintf(r->token, sizeof(r->token), "%s", token);
	if (r->tenant == NULL || r->principal == NULL || r->req == NULL) {
		free_repeat(r);
		return NULL;
	}
	return r;
}

int al_compat_repeat_start(al_compat_repeat *r)
{
	pthread_attr_t attr;
	pthread_t t;
	int rc = -EAGAIN;
	if (pthread_attr_init(&attr) == 0) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_mutex_lock(&rp_lock);
		rp_active++;
		rc = pthread_create(&t, &attr, repeat_main, r) == 0 ? 0
								    : -EAGAIN;
		if (rc < 0)
			rp_active--;
		pthread_mutex_unlock(&rp_lock);
		pthread_attr_destroy(&attr);
	}
	if (rc < 0)
		free_repeat(r);
	return rc;
}

void al_compat_repeat_free(al_compat_repeat *r)
{
	if (r != NULL)
		free_repeat(r);
}

void al_compat_repeats_stop(void)
{
	pthread_mutex_lock(&rp_lock);
	while (rp_active > 0)
		pthread_cond_wait(&rp_cond, &rp_lock);
	pthread_mutex_unlock(&rp_lock);
}
