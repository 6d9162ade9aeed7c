/* The clean environment of a run (see env.h).  Layers, each replacing a
 * same-named variable of the ones before it:
 *   1. the baseline: PATH, HOME, TMPDIR, LANG and this process's own
 *      locale, time zone and terminal variables, sanitized;
 *   2. the request's env;
 *   3. the host's variables (pass_env, then the granted secrets);
 *   4. the trusted variables (trusted_layer), which nothing overrides.
 * Layers 2 and 3 never carry a reserved name (request parse and the
 * configuration refuse them); one that did would be dropped here. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "json/syntax.h"
#include "child/env.h"
#include "child/tool_env.h"

extern char **environ;

typedef struct envv {
	char **v;
	size_t n, cap;
} envv;

static int env_put(envv *e, char *entry)
{
	if (entry == NULL)
		return -ENOMEM;
	size_t name_len = strcspn(entry, "=");
	for (size_t i = 0; i < e->n; i++) {
		if (strncmp(e->v[i], entry, name_len) == 0 &&
		    e->v[i][name_len] == '=') {
			al_explicit_free_str(e->v[i]);
			e->v[i] = entry;
			return 0;
		}
	}
	if (e->n + 1 >= e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 32;
		char **nv = realloc(e->v, cap * sizeof(*nv));
		if (nv == NULL) {
			al_explicit_free_str(entry);
			return -ENOMEM;
		}
		e->v = nv;
		e->cap = cap;
	}
	e->v[e->n++] = entry;
	e->v[e->n] = NULL;
	return 0;
}

static int tool_put(void *ctx, char *entry)
{
	return env_put(ctx, entry);
}

/* Baseline variables taken from this process's environment. */
static bool baseline_name(const char *s, size_t len)
{
	if ((len == 4 && memcmp(s, "LANG", 4) == 0) ||
	    (len == 2 && memcmp(s, "TZ", 2) == 0) ||
	    (len == 4 && memcmp(s, "TERM", 4) == 0))
		return true;
	if (len < 4 || len > 32 || memcmp(s, "LC_", 3) != 0)
		return false;
	for (size_t i = 3; i < len; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_'))
			return false;
	return true;
}

bool al_env_baseline_value_ok(const char *v)
{
	size_t len = strlen(v);
	if (len == 0 || len > AL_ENV_BASELINE_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = v[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-' || c == '@' || c == '+' || c == ':' ||
		      c == '/' || c == ','))
			return false;
	}
	/* TZ may name a file; a value never climbs out of the zone tree. */
	return strstr(v, "..") == NULL;
}

static int baseline_layer(envv *e, const al_env_base *base)
{
	int rc;
	if ((rc = env_put(e, al_strdup_printf("PATH=%s", base->path))) < 0 ||
	    (rc = env_put(e, al_strdup_printf("HOME=%s", base->home))) < 0 ||
	    (rc = env_put(e, strdup("LANG=C.UTF-8"))) < 0 ||
	    (rc = env_put(e, al_strdup_printf("TMPDIR=%s", base->tmpdir))) < 0)
		return rc;
	for (char **p = environ; p != NULL && *p != NULL; p++) {
		const char *eq = strchr(*p, '=');
		if (eq == NULL || !baseline_name(*p, (size_t)(eq - *p)) ||
		    !al_env_baseline_value_ok(eq + 1))
			continue;
		if ((rc = env_put(e, strdup(*p))) < 0)
			return rc;
	}
	return 0;
}

/* The trusted variables: set last, so no earlier layer overrides them.
 * Every AIRLOCK_* variable of a run, and the PATH the run gets, is set
 * here and only here. */
static int trusted_layer(envv *e, const al_env_base *base,
			 const al_exec *exec)
{
	const al_request *req = exec->request;
	int rc;
	if ((rc = env_put(e, al_strdup_printf("PATH=%s", base->path))) < 0 ||
	    (rc = env_put(e, al_strdup_printf("HOME=%s", base->home))) < 0 ||
	    (rc = env_put(e, al_strdup_printf("TMPDIR=%s", base->tmpdir))) < 0 ||
	    (rc = env_put(e, al_strdup_printf("AIRLOCK_RUN_ID=%s",
					      exec->run_id))) < 0 ||
	    (rc = env_put(e, al_strdup_printf("AIRLOCK_RUN_TEMP=%s",
					      base->tmpdir))) < 0)
		return rc;
	if (base->inbox != NULL && base->inbox_acks != NULL &&
	    ((rc = env_put(e, al_strdup_printf("AIRLOCK_INBOX=%s",
					       base->inbox))) < 0 ||
	     (rc = env_put(e, al_strdup_printf("AIRLOCK_INBOX_ACKS=%s",
					       base->inbox_acks))) < 0))
		return rc;
	if (req->name != NULL &&
	    (rc = env_put(e, al_strdup_printf("AIRLOCK_SCRIPT_NAME=%s",
					      req->name))) < 0)
		return rc;
	/* The toolbelt's variables and its PATH entry (docs/toolbelt.md). */
	return al_tool_env_add(base, exec, base->path, tool_put, e);
}

int al_env_baseline(const al_env_base *base, char ***out)
{
	envv e = {0};
	int rc = baseline_layer(&e, base);
	if (rc < 0) {
		al_env_free(e.v);
		return rc;
	}
	*out = e.v;
	return 0;
}

static bool entry_reserved(const char *entry)
{
	const char *eq = strchr(entry, '=');
	char name[AL_SECRET_VAR_BYTES];
	size_t len = eq != NULL ? (size_t)(eq - entry) : 0;
	if (eq == NULL || len == 0 || len >= sizeof(name))
		return true;
	memcpy(name, entry, len);
	name[len] = '\0';
	return al_env_name_reserved(name);
}

int al_env_build(const al_env_base *base, const al_exec *exec, char ***out)
{
	const al_request *req = exec->request;
	envv e = {0};
	int rc;

	if ((rc = baseline_layer(&e, base)) < 0)
		goto fail;
	for (size_t i = 0; i < req->n_env; i++) {
		if (al_env_name_reserved(req->env[i].name))
			continue;
		rc = env_put(&e, al_strdup_printf("%s=%s", req->env[i].name,
						  req->env[i].value));
		if (rc < 0)
			goto fail;
	}
	for (size_t i = 0; i < exec->n_host_env; i++) {
		if (entry_reserved(exec->host_env[i]))
			continue;
		if ((rc = env_put(&e, strdup(exec->host_env[i]))) < 0)
			goto fail;
	}
	if ((rc = trusted_layer(&e, base, exec)) < 0)
		goto fail;
	*out = e.v;
	return 0;
fail:
	al_env_free(e.v);
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
