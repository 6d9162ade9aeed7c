/* The clean environment of a run (see env.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "proc/env.h"
#include "proc/tool_env.h"

static int env_put(char **env, size_t *n, char *entry)
{
	if (entry == NULL)
		return -ENOMEM;
	size_t name_len = strcspn(entry, "=");
	for (size_t i = 0; i < *n; i++) {
		if (strncmp(env[i], entry, name_len) == 0 &&
		    env[i][name_len] == '=') {
			al_explicit_free_str(env[i]);
			env[i] = entry;
			return 0;
		}
	}
	env[(*n)++] = entry;
	return 0;
}

int al_env_build(const al_env_base *base, const al_exec *exec, char ***out)
{
	const al_request *req = exec->request;
	size_t cap = 10 + AL_TOOL_ENV_MAX + req->n_env + exec->n_host_env;
	size_t n = 0;
	char **env = calloc(cap + 1, sizeof(*env));
	if (env == NULL)
		return -ENOMEM;

	int rc = 0;
	if ((rc = env_put(env, &n, al_strdup_printf("PATH=%s", base->path))) < 0 ||
	    (rc = env_put(env, &n, al_strdup_printf("HOME=%s", base->home))) < 0 ||
	    (rc = env_put(env, &n, strdup("LANG=C.UTF-8"))) < 0 ||
	    (rc = env_put(env, &n, al_strdup_printf("TMPDIR=%s", base->tmpdir))) < 0 ||
	    (rc = env_put(env, &n, al_strdup_printf("AIRLOCK_RUN_ID=%s", exec->run_id))) < 0 ||
	    (rc = env_put(env, &n, al_strdup_printf("AIRLOCK_RUN_TEMP=%s", base->tmpdir))) < 0)
		goto fail;
	if (base->inbox != NULL && base->inbox_acks != NULL &&
	    ((rc = env_put(env, &n, al_strdup_printf("AIRLOCK_INBOX=%s", base->inbox))) < 0 ||
	     (rc = env_put(env, &n, al_strdup_printf("AIRLOCK_INBOX_ACKS=%s", base->inbox_acks))) < 0))
		goto fail;
	for (size_t i = 0; i < req->n_env; i++) {
		rc = env_put(env, &n, al_strdup_printf("%s=%s", req->env[i].name,
						       req->env[i].value));
		if (rc < 0)
			goto fail;
	}
	for (size_t i = 0; i < exec->n_host_env; i++) {
		if (strchr(exec->host_env[i], '=') == NULL)
			continue;
		rc = env_put(env, &n, strdup(exec->host_env[i]));
		if (rc < 0)
			goto fail;
	}
	/* Trusted, so last: nothing before overrides them. */
	if ((rc = al_tool_env_add(base, exec, env, &n, env_put)) < 0)
		goto fail;
	*out = env;
	return 0;
fail:
	al_env_free(env);
	return rc;
}

void al_env_free(char **env)
{
	if (env == NULL)
		return;
	for (char **p = env; *p != NULL; p++)
		al_explicit_free_str(*p);
	free(env);
}

char *al_env_path_for(const char *interpreter_path)
{
	const char *slash = strrchr(interpreter_path, '/');
	int dir_len = slash != NULL ? (int)(slash - interpreter_path) : 0;
	return al_strdup_printf("%.*s:/usr/local/bin:/usr/bin:/bin", dir_len,
				interpreter_path);
}
