/* pass_env and secret_env of a tenant (host/config_env.h). */
#include "host/config_env.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/env_policy.h"
#include "json/syntax.h"

static int bad(al_error **err, const char *path, const char *what)
{
	al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, path,
		     "configuration key %s: %s", path, what);
	return -EINVAL;
}

/* A key path (truncated when absurdly long: such keys are refused). */
__attribute__((format(printf, 2, 3))) static void kpf(char kp[600],
						       const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (vsnprintf(kp, 600, fmt, ap) >= 600)
		kp[599] = '\0';
	va_end(ap);
}

static int oom(al_error **err)
{
	al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL, "out of memory");
	return -ENOMEM;
}

/* The checks every variable a tenant's configuration introduces
 * (a pass_env name, a secret's variable) must pass; NULL when fine. */
static const char *var_refused(const al_cfg_tenant *t, const char *name)
{
	if (al_syntax_env_name(name, strlen(name)) != NULL)
		return "not a valid variable name";
	if (al_env_name_reserved(name))
		return "a reserved variable (PATH, HOME, TMPDIR, LANG, "
		       "AIRLOCK_*, LD_*)";
	if (al_env_policy_match(name) != NULL &&
	    !al_cfg_tenant_allows_env(t, name))
		return "a variable that loads code (the env policy) that "
		       "env_allow does not name";
	return NULL;
}

static bool baseline_var(const char *s)
{
	return strcmp(s, "TZ") == 0 || strcmp(s, "TERM") == 0 ||
	       strncmp(s, "LC_", 3) == 0;
}

static int parse_pass_env(json_t *v, const char *path, al_cfg_tenant *t,
			  al_error **err)
{
	char kp[600];
	const char *why;
	if (!json_is_array(v) || json_array_size(v) > 64)
		return bad(err, path, "expected an array of at most 64 names");
	size_t n = json_array_size(v);
	if ((t->pass_env = calloc(n + 1, sizeof(char *))) == NULL)
		return oom(err);
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(v, i);
		kpf(kp, "%s[%zu]", path, i);
		if (!json_is_string(e) ||
		    strlen(json_string_value(e)) != json_string_length(e))
			return bad(err, kp, "expected a string");
		const char *s = json_string_value(e);
		if ((why = var_refused(t, s)) != NULL)
			return bad(err, kp, why);
		if (baseline_var(s))
			return bad(err, kp, "the baseline passes LC_*, TZ and "
					    "TERM already (sanitized)");
		for (size_t j = 0; j < i; j++)
			if (strcmp(t->pass_env[j], s) == 0)
				return bad(err, kp, "duplicate entry");
		if ((t->pass_env[i] = strdup(s)) == NULL)
			return oom(err);
		t->n_pass_env = i + 1;
	}
	return 0;
}

static int parse_secret_env(json_t *v, const char *path, al_cfg_tenant *t,
			    al_error **err)
{
	char kp[600];
	const char *key, *why;
	json_t *e;
	if (!json_is_object(v) || json_object_size(v) > 256)
		return bad(err, path, "expected an object of at most 256 "
				      "secret names");
	size_t n = json_object_size(v), i = 0;
	if ((t->secret_env = calloc(n + 1, sizeof(*t->secret_env))) == NULL)
		return oom(err);
	json_object_foreach(v, key, e) {
		/* Secret names are configuration, not secrets: a valid one
		 * may be named in the path. */
		bool named = al_syntax_secret_name(key, strlen(key)) == NULL;
		kpf(kp, "%s.%s", path, named ? key : "?");
		if (!named)
			return bad(err, kp, "not a valid secret name");
		if (al_secret_name_reserved(key))
			return bad(err, kp, "a secret named after a reserved "
					    "variable");
		if (!json_is_string(e) ||
		    strlen(json_string_value(e)) != json_string_length(e))
			return bad(err, kp, "expected a variable name");
		const char *var = json_string_value(e);
		if ((why = var_refused(t, var)) != NULL)
			return bad(err, kp, why);
		for (size_t j = 0; j < i; j++)
			if (strcmp(t->secret_env[j].var, var) == 0)
				return bad(err, kp, "two secrets map to the "
						    "same variable");
		if ((t->secret_env[i].secret = strdup(key)) == NULL ||
		    (t->secret_env[i].var = strdup(var)) == NULL) {
			t->n_secret_env = i + 1;
			return oom(err);
		}
		t->n_secret_env = ++i;
	}
	return 0;
}

const char *al_cfg_secret_var(const al_cfg_tenant *t, const char *secret,
			      char buf[129])
{
	for (size_t i = 0; t != NULL && i < t->n_secret_env; i++)
		if (strcmp(t->secret_env[i].secret, secret) == 0)
			return t->secret_env[i].var;
	al_secret_default_var(secret, buf);
	return buf;
}

/* Every secret a grant names becomes a variable no other secret of it
 * becomes, that is not reserved and loads no code (unless allowed). */
static int check_grant(const al_cfg_tenant *t, const al_cfg_grant *g,
		       const char *path, al_error **err)
{
	char kp[600], a[129], b[129];
	const char *why;
	for (size_t i = 0; i < g->n_secrets; i++) {
		kpf(kp, "%s.secrets[%zu]", path, i);
		if (al_secret_name_reserved(g->secrets[i]))
			return bad(err, kp, "names a reserved variable (PATH, "
					    "HOME, TMPDIR, LANG, AIRLOCK_*, "
					    "LD_*)");
		const char *var = al_cfg_secret_var(t, g->secrets[i], a);
		if ((why = var_refused(t, var)) != NULL)
			return bad(err, kp, why);
		for (size_t j = 0; j < i; j++)
			if (strcmp(var, al_cfg_secret_var(t, g->secrets[j],
							  b)) == 0)
				return bad(err, kp, "two secrets become the "
						    "same variable");
	}
	return 0;
}

int al_cfg_env_parse(json_t *t, const char *path, al_cfg_tenant *out,
		     al_error **err)
{
	char kp[600];
	json_t *v;
	int rc;
	kpf(kp, "%s.pass_env", path);
	if ((v = json_object_get(t, "pass_env")) &&
	    (rc = parse_pass_env(v, kp, out, err)) < 0)
		return rc;
	kpf(kp, "%s.secret_env", path);
	if ((v = json_object_get(t, "secret_env")) &&
	    (rc = parse_secret_env(v, kp, out, err)) < 0)
		return rc;
	kpf(kp, "%s.grant", path);
	if ((rc = check_grant(out, &out->grant, kp, err)) < 0)
		return rc;
	for (size_t i = 0; i < out->n_pins; i++) {
		kpf(kp, "%s.pins[%zu].grant", path, i);
		if ((rc = check_grant(out, &out->pins[i].grant, kp, err)) < 0)
			return rc;
	}
	return 0;
}

void al_cfg_env_free(al_cfg_tenant *t)
{
	for (size_t i = 0; t->pass_env != NULL && i < t->n_pass_env; i++)
		free(t->pass_env[i]);
	free(t->pass_env);
	for (size_t i = 0; t->secret_env != NULL && i < t->n_secret_env;
	     i++) {
		free(t->secret_env[i].secret);
		free(t->secret_env[i].var);
	}
	free(t->secret_env);
	t->pass_env = NULL;
	t->secret_env = NULL;
	t->n_pass_env = t->n_secret_env = 0;
}
