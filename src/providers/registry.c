/* The built-in providers, safest first. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "providers/builtin.h"
#include "providers/remote.h"
#include "sandbox/sandbox.h"

/* Safest first: nothing runs, isolated here, isolated elsewhere, trusted. */
static const al_provider_ops *const builtins[] = {
	&al_disabled_provider,
	&al_sandbox_provider,
	&al_container_provider,
	&al_remote_provider,
	&al_local_provider,
	NULL,
};

const al_provider_ops *const *al_provider_builtins(void)
{
	return builtins;
}

const al_provider_ops *al_provider_lookup(const char *id)
{
	if (id == NULL)
		return NULL;
	for (const al_provider_ops *const *p = builtins; *p != NULL; p++)
		if (strcmp((*p)->id, id) == 0)
			return *p;
	return NULL;
}

/* mkdir -p with 0700 for the components we create. */
static int make_dirs(const char *path)
{
	char *copy = strdup(path);
	if (copy == NULL)
		return -ENOMEM;
	for (char *p = copy + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0700) < 0 && errno != EEXIST) {
			free(copy);
			return -errno;
		}
		*p = '/';
	}
	int rc = mkdir(copy, 0700) < 0 && errno != EEXIST ? -errno : 0;
	free(copy);
	return rc;
}

char *al_provider_cache_dir(void)
{
	char *dir = NULL;
	const char *env = getenv("AIRLOCK_CACHE_DIR");
	if (env != NULL && env[0] == '/')
		dir = strdup(env);
	else if (geteuid() == 0)
		dir = strdup("/var/cache/airlock");
	else if ((env = getenv("XDG_CACHE_HOME")) != NULL && env[0] == '/')
		dir = al_strdup_printf("%s/airlock", env);
	else if ((env = getenv("HOME")) != NULL && env[0] == '/')
		dir = al_strdup_printf("%s/.cache/airlock", env);
	if (dir == NULL)
		return NULL;
	/* Made only when it is missing: each component's mkdir would
	 * otherwise end in EEXIST, every time a handle is made. */
	struct stat st;
	if ((lstat(dir, &st) < 0 &&
	     (make_dirs(dir) < 0 || lstat(dir, &st) < 0)) ||
	    !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		free(dir);
		return NULL;
	}
	return dir;
}
