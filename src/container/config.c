/* The container provider's configuration (docs/containers.md) and the
 * cgroup its containers go beneath. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container/container.h"
#include "core/util.h"

void al_ct_strv_free(char **v)
{
	for (size_t i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

static int bad(al_error **err, const char *key, const char *what)
{
	return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, key,
			    "container provider config: %s %s", key, what);
}

static int get_u64(json_t *o, const char *key, uint64_t min, uint64_t max,
		   uint64_t *out, al_error **err)
{
	json_t *v = json_object_get(o, key);
	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) < min ||
	    (uint64_t)json_integer_value(v) > max)
		return bad(err, key, "is out of range");
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

int al_ct_config_parse(const char *json, al_ct_config *cfg, al_error **err)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->uid_base = 200000;
	cfg->uid_count = 1000;
	cfg->tmp_bytes = 64u * 1024u * 1024u;
	json_t *o = NULL;
	if (json != NULL) {
		o = json_loads(json, JSON_REJECT_DUPLICATES, NULL);
		if (o == NULL || !json_is_object(o)) {
			json_decref(o);
			return bad(err, "config", "is not a JSON object");
		}
	}
	int rc = 0;
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v)
	{
		if (strcmp(key, "runtime") != 0 && strcmp(key, "uid_base") != 0 &&
		    strcmp(key, "uid_count") != 0 &&
		    strcmp(key, "run_dir") != 0 &&
		    strcmp(key, "init_path") != 0 &&
		    strcmp(key, "images_dir") != 0 &&
		    strcmp(key, "docker_socket") != 0 &&
		    strcmp(key, "tmp_bytes") != 0) {
			rc = al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL,
					  "config",
					  "container provider config: unknown "
					  "key");
			goto out;
		}
	}
	v = o ? json_object_get(o, "runtime") : NULL;
	if (v != NULL && (!json_is_string(v) || json_string_length(v) == 0 ||
			  json_string_length(v) > 32)) {
		rc = bad(err, "runtime", "must be a runtime's name");
		goto out;
	}
	cfg->runtime_name = strdup(v ? json_string_value(v) : "runc");
	if (cfg->runtime_name == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/* An unknown name is not a configuration error: the provider is
	 * then unavailable with that reason (never another runtime). */
	cfg->variant = al_ct_variant_find(cfg->runtime_name);
	uint64_t base = cfg->uid_base, count = cfg->uid_count;
	if (o && ((rc = get_u64(o, "uid_base", 1000, 1u << 30, &base, err)) < 0 ||
		  (rc = get_u64(o, "uid_count", 1, 65536, &count, err)) < 0 ||
		  (rc = get_u64(o, "tmp_bytes", 1u << 20, 1ull << 34,
				&cfg->tmp_bytes, err)) < 0))
		goto out;
	cfg->uid_base = (uint32_t)base;
	cfg->uid_count = (uint32_t)count;
	v = o ? json_object_get(o, "run_dir") : NULL;
	if (v != NULL) {
		const char *s = json_string_value(v);
		if (s == NULL || s[0] != '/' || strlen(s) > 200) {
			rc = bad(err, "run_dir", "must be an absolute path");
			goto out;
		}
		if ((cfg->run_dir = strdup(s)) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
	}
	v = o ? json_object_get(o, "images_dir") : NULL;
	if (v != NULL) {
		const char *s = json_string_value(v);
		if (s == NULL || s[0] != '/' || strlen(s) > 200) {
			rc = bad(err, "images_dir", "must be an absolute path");
			goto out;
		}
		if ((cfg->images_dir = strdup(s)) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
	} else if ((cfg->images_dir = al_ct_images_default_dir()) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	v = o ? json_object_get(o, "docker_socket") : NULL;
	{
		const char *s = v ? json_string_value(v) : "/run/docker.sock";
		if (s == NULL || s[0] != '/' || strlen(s) > 100) {
			rc = bad(err, "docker_socket", "must be an absolute path");
			goto out;
		}
		if ((cfg->docker_socket = strdup(s)) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
	}
	v = o ? json_object_get(o, "init_path") : NULL;
	if (v != NULL) {
		const char *s = json_string_value(v);
		if (s == NULL || s[0] != '/' || strlen(s) > 200) {
			rc = bad(err, "init_path", "must be an absolute path");
			goto out;
		}
		if ((cfg->init_path = strdup(s)) == NULL)
			rc = -ENOMEM;
	}
out:
	json_decref(o);
	if (rc < 0)
		al_ct_config_clear(cfg);
	return rc;
}

void al_ct_config_clear(al_ct_config *cfg)
{
	free(cfg->runtime_name);
	free(cfg->run_dir);
	free(cfg->init_path);
	free(cfg->images_dir);
	free(cfg->docker_socket);
	memset(cfg, 0, sizeof(*cfg));
}

#ifndef AL_MODULE_DIR
#define AL_MODULE_DIR "/usr/local/lib/airlock"
#endif

/* libairlock links the engine in; the CLI's al_ct_docker_engine takes it
 * from the remote provider's module (src/cli/net_module.c), where libcurl
 * lives. */
const al_ct_engine *al_ct_engine_load(void)
{
	return al_ct_docker_engine();
}

char *al_ct_init_locate(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		char *slash = strrchr(self, '/');
		if (slash != NULL) {
			*slash = '\0';
			char *p = al_strdup_printf("%s/airlock-init", self);
			if (p != NULL && access(p, X_OK) == 0)
				return p;
			free(p);
		}
	}
	if (access(AL_MODULE_DIR "/airlock-init", X_OK) == 0)
		return strdup(AL_MODULE_DIR "/airlock-init");
	return NULL;
}

static bool is_prefix(const char *dir, const char *path)
{
	if (strcmp(dir, "/") == 0)
		return true;
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 &&
	       (path[n] == '/' || path[n] == '\0');
}

int al_ct_cgroup_parent(char **out)
{
	*out = NULL;
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (f == NULL)
		return -errno;
	char line[1024];
	char deepest[1024] = "";
	char paths[8][1024];
	size_t n = 0;
	while (fgets(line, sizeof(line), f) != NULL && n < 8) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2 == NULL)
			continue;
		*c2 = '\0';
		const char *ctrls = c1 + 1, *path = c2 + 1;
		/* the hierarchies that hold limits: v1's memory, pids and cpu,
		 * else the unified one (pure v2) */
		bool wanted = false;
		char tmp[256];
		snprintf(tmp, sizeof(tmp), ",%s,", ctrls);
		if (strstr(tmp, ",memory,") || strstr(tmp, ",pids,") ||
		    strstr(tmp, ",cpu,"))
			wanted = true;
		if (!wanted)
			continue;
		snprintf(paths[n++], sizeof(paths[0]), "%s", path);
		if (strlen(path) > strlen(deepest))
			snprintf(deepest, sizeof(deepest), "%s", path);
	}
	fclose(f);
	if (n == 0) {
		/* pure v2: our unified cgroup */
		f = fopen("/proc/self/cgroup", "re");
		if (f == NULL)
			return -errno;
		while (fgets(line, sizeof(line), f) != NULL)
			if (strncmp(line, "0::", 3) == 0) {
				line[strcspn(line, "\n")] = '\0';
				snprintf(deepest, sizeof(deepest), "%s",
					 line + 3);
				n = 1;
			}
		fclose(f);
		if (n == 0)
			return -ENOENT;
	}
	for (size_t i = 0; i < n && n > 1; i++)
		if (!is_prefix(paths[i], deepest))
			return -ENOENT;
	*out = strdup(strcmp(deepest, "/") == 0 ? "" : deepest);
	return *out ? 0 : -ENOMEM;
}
