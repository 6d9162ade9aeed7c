/* Configuration and host mechanisms of the sandbox provider. */
#include "sandbox/context.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "providers/cache_dir.h"
#include "core/util.h"
#include "lang/languages.h"
#include "sandbox/landlock.h"
#include "sandbox/mechanisms.h"

static int bad(al_error **err, const char *key)
{
	return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, key,
			    "invalid sandbox provider configuration");
}

/* One language's pool settings; the key path names what is wrong. */
static int parse_pool_lang(const char *lang, json_t *obj, al_sb_pool_lang *pl,
			   al_error **err)
{
	char path[96];
	snprintf(path, sizeof(path), "pool.%s", lang);
	if (!json_is_object(obj))
		return bad(err, path);
	memset(pl, 0, sizeof(*pl));
	snprintf(pl->language, sizeof(pl->language), "%s", lang);
	pl->refill = true;
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v)
	{
		bool ok = false;
		if (strcmp(key, "size") == 0) {
			ok = json_is_integer(v) && json_integer_value(v) >= 0 &&
			     json_integer_value(v) <= AL_SB_POOL_MAX_SIZE;
			if (ok)
				pl->size = (unsigned)json_integer_value(v);
		} else if (strcmp(key, "network") == 0) {
			ok = json_is_string(v) &&
			     al_network_from_name(json_string_value(v),
						  &pl->network) == 0 &&
			     pl->network != AL_NETWORK_HOST;
		} else if (strcmp(key, "workspace") == 0) {
			ok = json_is_string(v) &&
			     al_workspace_mode_from_name(json_string_value(v),
							 &pl->workspace) == 0;
		} else if (strcmp(key, "refill") == 0) {
			ok = json_is_boolean(v);
			pl->refill = json_is_true(v);
		} else if (strcmp(key, "inbox") == 0) {
			ok = json_is_boolean(v);
			pl->inbox = json_is_true(v);
		} else {
			/* the unknown key's name is config, not a value */
			snprintf(path, sizeof(path), "pool.%s", lang);
			return bad(err, path);
		}
		if (!ok) {
			snprintf(path, sizeof(path), "pool.%s.%s", lang, key);
			return bad(err, path);
		}
	}
	return 0;
}

static int parse_pool(json_t *v, al_sb_config *cfg, al_error **err)
{
	if (!json_is_object(v))
		return bad(err, "pool");
	const char *lang;
	json_t *o;
	json_object_foreach(v, lang, o)
	{
		/* never echo an unknown name: it may be anything */
		if (!al_language_known(lang) || strlen(lang) >= 16)
			return bad(err, "pool");
		al_sb_pool_lang pl = {0};
		int rc = parse_pool_lang(lang, o, &pl, err);
		if (rc < 0)
			return rc;
		if (pl.size == 0)
			continue;
		if (cfg->n_pool >= AL_SB_POOL_MAX_LANGS)
			return bad(err, "pool");
		cfg->pool[cfg->n_pool++] = pl;
	}
	return 0;
}

int al_sb_config_parse(const char *text, al_sb_config *cfg, al_error **err)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->uid_base = AL_SB_DEFAULT_UID_BASE;
	cfg->uid_count = AL_SB_DEFAULT_UID_COUNT;
	cfg->tmp_bytes = AL_SB_DEFAULT_TMP_BYTES;
	cfg->workspace_bytes = AL_SB_DEFAULT_WORKSPACE_BYTES;
	cfg->inbox_acks_bytes = AL_SB_DEFAULT_INBOX_ACKS_BYTES;
	cfg->socket_bytes = AL_SB_DEFAULT_SOCKET_BYTES;
	if (text == NULL || text[0] == '\0')
		return 0;
	json_error_t jerr;
	json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL || !json_is_object(root)) {
		json_decref(root);
		return bad(err, "config");
	}
	int rc = 0;
	const char *key;
	json_t *v;
	json_object_foreach(root, key, v)
	{
		if (strcmp(key, "uid_base") == 0 && json_is_integer(v) &&
		    json_integer_value(v) > 0 &&
		    json_integer_value(v) < 0x7fffffff)
			cfg->uid_base = (uint32_t)json_integer_value(v);
		else if (strcmp(key, "uid_count") == 0 && json_is_integer(v) &&
			 json_integer_value(v) > 0 &&
			 json_integer_value(v) <= 65536)
			cfg->uid_count = (uint32_t)json_integer_value(v);
		else if (strcmp(key, "run_dir") == 0 && json_is_string(v) &&
			 json_string_value(v)[0] == '/') {
			free(cfg->run_dir);
			cfg->run_dir = strdup(json_string_value(v));
			if (cfg->run_dir == NULL)
				rc = -ENOMEM;
		} else if (strcmp(key, "allow_host_network") == 0 &&
			   json_is_boolean(v))
			cfg->allow_host_network = json_is_true(v);
		else if (strcmp(key, "tmp_bytes") == 0 && json_is_integer(v) &&
			 json_integer_value(v) >= 65536)
			cfg->tmp_bytes = (uint64_t)json_integer_value(v);
		else if (strcmp(key, "workspace_bytes") == 0 &&
			 json_is_integer(v) && json_integer_value(v) >= 65536)
			cfg->workspace_bytes = (uint64_t)json_integer_value(v);
		else if (strcmp(key, "inbox_acks_bytes") == 0 &&
			 json_is_integer(v) && json_integer_value(v) >= 65536)
			cfg->inbox_acks_bytes = (uint64_t)json_integer_value(v);
		else if (strcmp(key, "socket_bytes") == 0 && json_is_integer(v) &&
			 json_integer_value(v) >= 65536)
			cfg->socket_bytes = (uint64_t)json_integer_value(v);
		else if (strcmp(key, "pool") == 0) {
			rc = parse_pool(v, cfg, err);
			if (rc < 0)
				break;
		} else {
			rc = bad(err, "sandbox.config");
			break;
		}
	}
	if (rc == 0 && (uint64_t)cfg->uid_base + cfg->uid_count > 0x7fffffffu)
		rc = bad(err, "uid_count");
	json_decref(root);
	if (rc < 0)
		al_sb_config_clear(cfg);
	return rc;
}

void al_sb_config_clear(al_sb_config *cfg)
{
	free(cfg->run_dir);
	cfg->run_dir = NULL;
}

/* The kernel's last capability and Landlock ABI are the running kernel's:
 * read once per process. */
static pthread_once_t kernel_once = PTHREAD_ONCE_INIT;
static int kernel_cap_last = 40, kernel_landlock_abi;

static void read_kernel(void)
{
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	if (f) {
		if (fscanf(f, "%d", &kernel_cap_last) != 1)
			kernel_cap_last = 40;
		fclose(f);
	}
	kernel_landlock_abi = al_sb_landlock_abi();
}

/* The config as the observation key sees it: every key, canonical. */
static char *config_text(const al_sb_config *c)
{
	return al_strdup_printf(
		"uid_base=%u uid_count=%u run_dir=%s allow_host_network=%d "
		"tmp_bytes=%llu workspace_bytes=%llu inbox_acks_bytes=%llu "
		"socket_bytes=%llu",
		c->uid_base, c->uid_count, c->run_dir ? c->run_dir : "-",
		(int)c->allow_host_network, (unsigned long long)c->tmp_bytes,
		(unsigned long long)c->workspace_bytes,
		(unsigned long long)c->inbox_acks_bytes,
		(unsigned long long)c->socket_bytes);
}

int al_sb_context_need_filter(al_sb_context *ctx, al_error **err)
{
	if (ctx->filter.insns != NULL)
		return 0;
	return al_sb_filter_compile(&ctx->filter, err);
}

/* The trials, now; their verdicts are cached under ctx->key. */
static int observe(al_sb_context *ctx, al_error **err)
{
	int rc = al_sb_context_need_filter(ctx, err);
	if (rc < 0)
		return rc;
	al_sb_try_mechanisms(ctx->privileged, ctx->cap_last, ctx->landlock_abi,
			     &ctx->filter, &ctx->obs.mech);
	al_sb_cgroups_trial(&ctx->cg, &ctx->obs.cg);
	if (ctx->key[0] != '\0')
		al_sb_observations_store(ctx->cache_dir, ctx->key, &ctx->obs);
	return 0;
}

int al_sb_context_init(al_sb_context *ctx, const char *config_json,
		       unsigned flags, al_error **err)
{
	memset(ctx, 0, sizeof(*ctx));
	int rc = al_sb_config_parse(config_json, &ctx->cfg, err);
	if (rc < 0)
		return rc;
	ctx->privileged = geteuid() == 0;
	(void)pthread_once(&kernel_once, read_kernel);
	ctx->cap_last = kernel_cap_last;
	ctx->landlock_abi = kernel_landlock_abi;
	ctx->cache_dir = al_provider_cache_dir();
	al_sb_cgroups_locate(&ctx->cg);

	char *cfg = config_text(&ctx->cfg);
	al_sb_key_input in = {.config = cfg, .cg = &ctx->cg,
			      .landlock_abi = ctx->landlock_abi,
			      .cap_last = ctx->cap_last};
	if (cfg == NULL || ctx->cache_dir == NULL ||
	    al_sb_observations_keys(&in, ctx->key, ctx->lang_key) < 0) {
		ctx->key[0] = '\0'; /* observe without a cache */
		ctx->lang_key[0] = '\0';
	}
	free(cfg);

	if (!(flags & AL_SB_CTX_OBSERVE_NOW) && ctx->key[0] != '\0' &&
	    al_sb_observations_load(ctx->cache_dir, ctx->key, &ctx->obs)) {
		al_sb_cgroups_apply(&ctx->cg, &ctx->obs.cg);
		ctx->obs_cached = true;
	} else {
		rc = observe(ctx, err);
	}
	if (rc == 0 && (flags & AL_SB_CTX_RUNS))
		rc = al_sb_context_need_filter(ctx, err);
	if (rc < 0)
		al_sb_context_clear(ctx);
	return rc;
}

void al_sb_context_clear(al_sb_context *ctx)
{
	al_sb_config_clear(&ctx->cfg);
	al_sb_cgroups_clear(&ctx->cg);
	al_sb_filter_clear(&ctx->filter);
	free(ctx->cache_dir);
	ctx->cache_dir = NULL;
}
