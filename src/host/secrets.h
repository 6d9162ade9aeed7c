/* Internal: the host's secret store (a directory of files, one per name,
 * or one JSON file {"NAME": "value"}). */
#ifndef AL_HOST_SECRETS_H
#define AL_HOST_SECRETS_H

#include <stddef.h>

#include "host/config.h"

/* At load: the store exists, is ours and is private (mode 0600 / 0700 or
 * stricter); otherwise refused with AL_ERR_INVALID_CONFIG. */
int al_secrets_check(al_secrets_kind kind, const char *path, al_error **err);
/* At launch: reads the named secrets into "VAR=value" strings (*env, *n),
 * VAR being vars[i] (the variable secret names[i] becomes; vars NULL:
 * the names themselves).  Fails with reason "secret_unavailable" naming
 * no value. */
int al_secrets_resolve(al_secrets_kind kind, const char *path,
		       char *const *names, char *const *vars, size_t n_names,
		       char ***env, al_error **err);
/* Wipes and frees resolved secrets. */
void al_secrets_env_free(char **env, size_t n);

#endif
