/* The configuration's "compat" object (docs/compat.md):
 *   "compat": {"piston": {...}, "judge0": {...}}
 * A section present enables its API; its keys are "enabled" (default
 * true), "anonymous_tenant" and "anonymous_rate" ({"requests", "per_s"},
 * required with an anonymous tenant: an open endpoint needs a bound). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/host.h>

#include "host/config.h"
#include "server/compat.h"

static int bad(al_error **err, const char *path, const char *msg)
{
	return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, path, "%s",
			    msg);
}

static bool only_keys(json_t *o, const char *const *keys, const char **bad_key)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		bool known = false;
		for (size_t i = 0; keys[i] != NULL; i++)
			known = known || strcmp(k, keys[i]) == 0;
		if (!known) {
			*bad_key = k;
			return false;
		}
	}
	return true;
}

static int uint_in(json_t *v, unsigned lo, unsigned hi, unsigned *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < lo ||
	    json_integer_value(v) > hi)
		return -1;
	*out = (unsigned)json_integer_value(v);
	return 0;
}

/* "callbacks": {"allow": ["http://127.0.0.1:8080", ...], "max_tries": 3,
 * "timeout_ms": 5000}: a callback goes only to an allowed origin (no
 * request into the host's own network unless the operator names it). */
static int parse_callbacks(json_t *e, const char *path, al_compat_api *api,
			   al_error **err)
{
	static const char *const ck[] = {"allow", "max_tries", "timeout_ms",
					 NULL};
	const char *bk = NULL;
	json_t *allow = json_object_get(e, "allow");
	if (!json_is_object(e) || !only_keys(e, ck, &bk) ||
	    !json_is_array(allow) || json_array_size(allow) > 64)
		return bad(err, path,
			   "callbacks: expected {\"allow\": [origins], "
			   "\"max_tries\", \"timeout_ms\"}");
	api->callback_tries = 3;
	api->callback_timeout_ms = 5000;
	json_t *t = json_object_get(e, "max_tries");
	if (t != NULL && uint_in(t, 1, 10, &api->callback_tries) < 0)
		return bad(err, path, "callbacks.max_tries: 1..10");
	t = json_object_get(e, "timeout_ms");
	if (t != NULL && uint_in(t, 100, 60000, &api->callback_timeout_ms) < 0)
		return bad(err, path, "callbacks.timeout_ms: 100..60000");
	api->callback_allow = calloc(json_array_size(allow) + 1,
				     sizeof(char *));
	if (api->callback_allow == NULL)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, path,
				    "out of memory");
	size_t i;
	json_t *o;
	json_array_foreach(allow, i, o) {
		char origin[256];
		const char *u = json_string_value(o);
		al_compat_api probe = {.callback_allow = (char *[]){(char *)u, NULL},
				       .n_callback_allow = 1};
		if (u == NULL || !al_compat_callback_allowed(&probe, u, origin) ||
		    strcmp(origin, u) != 0)
			return bad(err, path,
				   "callbacks.allow: expected origins such "
				   "as \"http://127.0.0.1:8080\" (scheme, host "
				   "and port, nothing else)");
		if ((api->callback_allow[api->n_callback_allow++] =
			     strdup(u)) == NULL)
			return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, path,
					    "out of memory");
	}
	return 0;
}

static int parse_api(json_t *v, const char *name, const al_config *cfg,
		     al_compat_api *api, al_error **err)
{
	static const char *const keys[] = {"enabled", "anonymous_tenant",
					   "anonymous_rate", "callbacks", NULL};
	char path[64];
	const char *bk = NULL;
	snprintf(path, sizeof(path), "compat.%s", name);
	if (!json_is_object(v))
		return bad(err, path, "expected an object");
	if (!only_keys(v, keys, &bk))
		return bad(err, path, "unknown key");
	api->enabled = true;
	json_t *e = json_object_get(v, "enabled");
	if (e != NULL) {
		if (!json_is_boolean(e))
			return bad(err, path, "enabled: expected a boolean");
		api->enabled = json_is_true(e);
	}
	e = json_object_get(v, "anonymous_tenant");
	if (e != NULL) {
		if (!json_is_string(e) ||
		    (cfg != NULL &&
		     al_config_tenant(cfg, json_string_value(e)) == NULL))
			return bad(err, path,
				   "anonymous_tenant: not a configured tenant");
		api->anonymous_tenant = strdup(json_string_value(e));
		if (api->anonymous_tenant == NULL)
			return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, path,
					    "out of memory");
	}
	e = json_object_get(v, "anonymous_rate");
	if (e != NULL) {
		static const char *const rk[] = {"requests", "per_s", NULL};
		if (!json_is_object(e) || !only_keys(e, rk, &bk) ||
		    uint_in(json_object_get(e, "requests"), 1, 1000000,
			    &api->rate_requests) < 0 ||
		    uint_in(json_object_get(e, "per_s"), 1, 86400,
			    &api->rate_per_s) < 0)
			return bad(err, path,
				   "anonymous_rate: expected {\"requests\": "
				   "1..1000000, \"per_s\": 1..86400}");
	}
	e = json_object_get(v, "callbacks");
	if (e != NULL && strcmp(name, "judge0") == 0) {
		int rc = parse_callbacks(e, path, api, err);
		if (rc < 0)
			return rc;
	} else if (e != NULL) {
		return bad(err, path, "callbacks: only Judge0 has callbacks");
	}
	/* An open door needs a bound: its own rate, or the tenant's. */
	const al_cfg_tenant *t =
		api->anonymous_tenant && cfg
			? al_config_tenant(cfg, api->anonymous_tenant)
			: NULL;
	if (api->anonymous_tenant != NULL && api->rate_requests == 0 &&
	    (t == NULL || t->rate_requests == 0))
		return bad(err, path,
			   "anonymous_tenant needs an anonymous_rate or a "
			   "tenant with a request_rate");
	return 0;
}

void al_compat_cfg_free(al_compat_cfg *cfg)
{
	if (cfg == NULL)
		return;
	al_compat_api *apis[] = {&cfg->piston, &cfg->judge0};
	for (size_t i = 0; i < 2; i++) {
		free(apis[i]->anonymous_tenant);
		for (size_t k = 0; k < apis[i]->n_callback_allow; k++)
			free(apis[i]->callback_allow[k]);
		free(apis[i]->callback_allow);
	}
	free(cfg);
}

int al_compat_cfg_parse(const char *text, size_t len, al_compat_cfg **out,
			al_error **err)
{
	*out = NULL;
	json_t *root = json_loadb(text, len, 0, NULL);
	json_t *c = json_is_object(root) ? json_object_get(root, "compat")
					  : NULL;
	int rc = 0;
	al_config *cfg = NULL;
	if (c == NULL)
		goto out;
	static const char *const keys[] = {"piston", "judge0", NULL};
	const char *bk = NULL;
	if (!json_is_object(c) || !only_keys(c, keys, &bk)) {
		rc = bad(err, "compat",
			 "expected {\"piston\": {…}, \"judge0\": {…}}");
		goto out;
	}
	/* The tenants named must exist: parse the same text (already
	 * checked by the caller) for them. */
	if ((rc = al_config_parse(text, len, &cfg, err)) < 0)
		goto out;
	al_compat_cfg *cc = calloc(1, sizeof(*cc));
	if (cc == NULL) {
		rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, "compat",
				  "out of memory");
		goto out;
	}
	json_t *v;
	if (((v = json_object_get(c, "piston")) != NULL &&
	     (rc = parse_api(v, "piston", cfg, &cc->piston, err)) < 0) ||
	    ((v = json_object_get(c, "judge0")) != NULL &&
	     (rc = parse_api(v, "judge0", cfg, &cc->judge0, err)) < 0)) {
		al_compat_cfg_free(cc);
		goto out;
	}
	*out = cc;
out:
	al_config_free(cfg);
	json_decref(root);
	return rc;
}

int al_compat_overlay_defaults(const char *text, size_t len, char **merged,
			       size_t *mlen, al_error **err)
{
	*merged = NULL;
	*mlen = 0;
	json_t *root = json_loadb(text, len, 0, NULL);
	bool overlay = json_is_object(root) &&
		       json_object_get(root, "compat") != NULL &&
		       json_object_get(root, "providers") == NULL &&
		       json_object_get(root, "tenants") == NULL;
	int rc = 0;
	if (overlay) {
		al_config *def = NULL;
		json_t *base = NULL;
		if ((rc = al_config_default(&def, err)) == 0 &&
		    (base = json_loads(def->source, 0, NULL)) != NULL &&
		    json_object_update(base, root) == 0 &&
		    (*merged = json_dumps(base, JSON_COMPACT)) != NULL)
			*mlen = strlen(*merged);
		else if (rc == 0)
			rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, "$",
					  "out of memory");
		json_decref(base);
		al_config_free(def);
	}
	json_decref(root);
	return rc;
}
