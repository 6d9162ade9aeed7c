/* Internal: a tenant's environment directives (docs/configuration.md,
 * "Environment"): pass_env (daemon variables a run receives) and
 * secret_env (the variable each secret becomes), and the load-time check
 * that no granted secret becomes a reserved or code-loading variable. */
#ifndef AL_HOST_CONFIG_ENV_H
#define AL_HOST_CONFIG_ENV_H

#include <stddef.h>

#include <jansson.h>

#include "host/config.h"

/* Parses t's "pass_env" and "secret_env" (after env_allow and the grants
 * are parsed) and checks every secret the tenant's grant and pins name.
 * 0, or AL_ERR_INVALID_CONFIG naming the key path (never a value). */
int al_cfg_env_parse(json_t *t, const char *path, al_cfg_tenant *out,
		     al_error **err);
void al_cfg_env_free(al_cfg_tenant *t);
/* The variable a granted secret becomes for this tenant (t may be NULL:
 * the default mapping).  Returns buf or the mapped name. */
const char *al_cfg_secret_var(const al_cfg_tenant *t, const char *secret,
			      char buf[129]);

#endif
