/* What a daemon's idle supervisors need from a sandbox candidate's
 * configuration (see sandbox.h): the pool keys stay the sandbox's own. */
#include <errno.h>
#include <string.h>

#include "sandbox/context.h"
#include "sandbox/sandbox.h"

static bool is_sandbox(const char *provider, json_t *config)
{
	return strcmp(provider, al_sandbox_provider.id) == 0 &&
	       json_is_object(config);
}

/* The configuration narrowed to one language's pool: its own settings
 * kept, size 1, an inbox class, no refill of its own: the supervisor
 * makes the member again between its runs (al_sandbox_pool_renew), once
 * the run before is verified gone. */
static json_t *narrowed(json_t *config, const char *lang, json_t *spec)
{
	json_t *narrow = json_deep_copy(config);
	json_t *mine = json_deep_copy(spec);
	json_t *one = json_object();
	if (narrow == NULL || mine == NULL || one == NULL ||
	    json_object_set_new(mine, "size", json_integer(1)) < 0 ||
	    json_object_set_new(mine, "refill", json_false()) < 0 ||
	    json_object_set_new(mine, "inbox", json_true()) < 0 ||
	    json_object_set(one, lang, mine) < 0 ||
	    json_object_set(narrow, "pool", one) < 0) {
		json_decref(narrow);
		narrow = NULL;
	}
	json_decref(mine);
	json_decref(one);
	return narrow;
}

int al_sandbox_idle_targets(const char *provider, json_t *config,
			    al_sandbox_warm_fn on, void *ctx)
{
	json_t *pool = is_sandbox(provider, config)
			       ? json_object_get(config, "pool")
			       : NULL;
	const char *lang;
	json_t *spec;
	if (!json_is_object(pool))
		return 0;
	json_object_foreach(pool, lang, spec) {
		json_t *size = json_object_get(spec, "size");
		if (!json_is_integer(size) || json_integer_value(size) < 0 ||
		    json_integer_value(size) > AL_SB_POOL_MAX_SIZE)
			continue;
		json_t *ensure = narrowed(config, lang, spec);
		if (ensure == NULL)
			return -ENOMEM;
		unsigned want = (unsigned)json_integer_value(size);
		int rc = want > 0 ? on(ctx, lang, want, ensure) : 0;
		json_decref(ensure);
		if (rc < 0)
			return rc;
	}
	return 0;
}

void al_sandbox_config_drop_pools(const char *provider, json_t *config)
{
	if (is_sandbox(provider, config))
		json_object_del(config, "pool");
}
