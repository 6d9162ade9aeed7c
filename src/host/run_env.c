/* The host's layer of a run's environment (host/run_env.h). */
#include "host/run_env.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/json.h>

#include "core/util.h"
#include "host/config_env.h"
#include "host/secrets.h"

static bool strv_has_var(char *const *v, size_t n, const char *name)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < n; i++)
		if (v[i] != NULL && strncmp(v[i], name, nl) == 0 &&
		    v[i][nl] == '=')
			return true;
	return false;
}

static bool request_sets(const al_request *req, const char *name)
{
	for (size_t i = 0; i < req->n_env; i++)
		if (strcmp(req->env[i].name, name) == 0)
			return true;
	return false;
}

static bool secret_becomes(const al_cfg_tenant *t, const al_request *req,
			   const char *name)
{
	char buf[129];
	for (size_t i = 0; i < req->grant.n_secrets; i++)
		if (strcmp(al_cfg_secret_var(t, req->grant.secrets[i], buf),
			   name) == 0)
			return true;
	return false;
}

int al_run_env_resolve(const al_config *cfg, const al_cfg_tenant *t,
		       const al_request *req, char ***fwd, size_t *n_fwd,
		       char ***out, size_t *n_out)
{
	const al_grant *g = &req->grant;
	size_t n_pass = t != NULL ? t->n_pass_env : 0, n_sec = 0, n = 0;
	char **names = calloc(g->n_secrets + 1, sizeof(*names));
	char **vars = calloc(g->n_secrets + 1, sizeof(*vars));
	char (*bufs)[129] = calloc(g->n_secrets + 1, sizeof(*bufs));
	char **resolved = NULL, **all = NULL;
	int rc = -ENOMEM;

	*out = NULL;
	*n_out = 0;
	if (names == NULL || vars == NULL || bufs == NULL)
		goto out;
	/* Secrets the caller forwarded are not read from the store. */
	for (size_t i = 0; i < g->n_secrets; i++) {
		const char *var = al_cfg_secret_var(t, g->secrets[i], bufs[i]);
		if (strv_has_var(*fwd, *n_fwd, var))
			continue;
		names[n_sec] = g->secrets[i];
		vars[n_sec++] = (char *)var;
	}
	if ((all = calloc(n_pass + n_sec + *n_fwd + 1, sizeof(*all))) == NULL)
		goto out;
	/* pass_env: the baseline's extension, so every later layer (the
	 * request's env, a secret, a forwarded variable) wins over it. */
	for (size_t i = 0; i < n_pass; i++) {
		const char *name = t->pass_env[i];
		const char *val = getenv(name);
		if (val == NULL || strlen(val) > AL_MAX_ENV_VALUE_BYTES ||
		    request_sets(req, name) || secret_becomes(t, req, name) ||
		    strv_has_var(*fwd, *n_fwd, name))
			continue;
		if ((all[n] = al_strdup_printf("%s=%s", name, val)) == NULL)
			goto out;
		n++;
	}
	rc = al_secrets_resolve(cfg->secrets_kind, cfg->secrets_path, names,
				vars, n_sec, &resolved, NULL);
	if (rc < 0) {
		rc = 1;
		goto out;
	}
	/* The strings move; only the arrays are freed. */
	for (size_t i = 0; i < n_sec; i++)
		all[n++] = resolved[i];
	for (size_t i = 0; i < *n_fwd; i++)
		all[n++] = (*fwd)[i];
	free(resolved);
	free(*fwd);
	*fwd = NULL;
	*n_fwd = 0;
	*out = all;
	*n_out = n;
	all = NULL;
	rc = 0;
out:
	al_secrets_env_free(all, n);
	free(names);
	free(vars);
	free(bufs);
	return rc;
}
