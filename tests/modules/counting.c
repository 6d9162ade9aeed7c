/* "counting": the example provider as a module that records each call the
 * host makes, for tests/integration/test_provider_modules.py.
 *
 * Configuration: the example's keys ("fail_release"), plus
 *   "log": PATH           append "PID CALL [HANDLE RESULT]" per call
 *   "healthy_checks": N   a handle's health fails after N good checks
 * Handles are numbered per process (1, 2, ...) so a log shows whether a
 * handle was used again after its release. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <airlock/provider.h>

#include "../../examples/provider/example_provider.h"

#define ID "counting"

typedef struct cfg {
	char log[512];
	long healthy; /* -1: always healthy */
	char *rest;   /* the example's own keys, or NULL */
} cfg;

struct al_provider_handle {
	al_provider_handle *inner;
	unsigned long n;
	atomic_long checks;
	cfg c;
};

static atomic_ulong handles;

static void note(const cfg *c, const char *what, unsigned long h,
		 const char *result)
{
	if (c->log[0] == '\0')
		return;
	int fd = open(c->log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (h != 0)
		dprintf(fd, "%d %s %lu %s\n", (int)getpid(), what, h, result);
	else
		dprintf(fd, "%d %s\n", (int)getpid(), what);
	close(fd);
}

static int parse(const char *text, cfg *c, al_error **err)
{
	memset(c, 0, sizeof(*c));
	c->healthy = -1;
	if (text == NULL || *text == '\0')
		return 0;
	json_t *o = json_loads(text, 0, NULL);
	if (!json_is_object(o)) {
		json_decref(o);
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, "config",
				    "the configuration must be an object");
	}
	json_t *v = json_object_get(o, "log");
	if (json_is_string(v))
		snprintf(c->log, sizeof(c->log), "%s", json_string_value(v));
	v = json_object_get(o, "healthy_checks");
	if (json_is_integer(v))
		c->healthy = (long)json_integer_value(v);
	json_object_del(o, "log");
	json_object_del(o, "healthy_checks");
	if (json_object_size(o) > 0 &&
	    (c->rest = json_dumps(o, JSON_COMPACT)) == NULL) {
		json_decref(o);
		return -ENOMEM;
	}
	json_decref(o);
	return 0;
}

static int c_probe(const char *config, al_facts **out, al_error **err)
{
	cfg c;
	int rc = parse(config, &c, err);
	if (rc < 0)
		return rc;
	note(&c, "probe", 0, NULL);
	rc = example_provider_ops.probe(c.rest, out, err);
	free(c.rest);
	if (rc < 0 || *out == NULL)
		return rc;
	/* The facts name this provider, not the example it wraps. */
	char *id = strdup(ID);
	if (id == NULL) {
		al_facts_free(*out);
		*out = NULL;
		return -ENOMEM;
	}
	free((*out)->provider);
	(*out)->provider = id;
	return 0;
}

static int c_ensure(const char *config, al_provider_handle **out,
		    al_error **err)
{
	al_provider_handle *h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	int rc = parse(config, &h->c, err);
	if (rc == 0)
		rc = example_provider_ops.ensure(h->c.rest, &h->inner, err);
	if (rc < 0) {
		free(h->c.rest);
		free(h);
		return rc;
	}
	h->n = atomic_fetch_add(&handles, 1) + 1;
	note(&h->c, "ensure", h->n, "ok");
	*out = h;
	return 0;
}

static int c_health(al_provider_handle *h, al_error **err)
{
	long n = atomic_fetch_add(&h->checks, 1);
	if (h->c.healthy >= 0 && n >= h->c.healthy) {
		note(&h->c, "health", h->n, "fail");
		return al_error_set(err, AL_ERR_UNAVAILABLE, EIO, NULL,
				    "unhealthy (configured)");
	}
	note(&h->c, "health", h->n, "ok");
	return example_provider_ops.health(h->inner, err);
}

static int c_execute(al_provider_handle *h, const al_exec *ex, al_result *res,
		     al_error **err)
{
	note(&h->c, "execute", h->n, "start");
	int rc = example_provider_ops.execute(h->inner, ex, res, err);
	if (rc == 0 && res->provider != NULL) {
		char *id = strdup(ID);
		if (id != NULL) {
			free(res->provider->provider);
			res->provider->provider = id;
		}
	}
	return rc;
}

static int c_interrupt(al_provider_handle *h, const char *run_id,
		       al_error **err)
{
	return example_provider_ops.interrupt(h->inner, run_id, err);
}

static int c_release(al_provider_handle *h, al_error **err)
{
	int rc = example_provider_ops.release(h->inner, err);
	note(&h->c, "release", h->n, rc < 0 ? "fail" : "ok");
	free(h->c.rest);
	free(h);
	return rc;
}

static const al_provider_ops counting_ops = {
	AL_ABI_HEADER(al_provider_ops),
	.id = ID,
	.probe = c_probe,
	.ensure = c_ensure,
	.health = c_health,
	.execute = c_execute,
	.interrupt = c_interrupt,
	.release = c_release,
};

const al_provider_ops *al_provider_module_entry(void)
{
	return &counting_ops;
}
