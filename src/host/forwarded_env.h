/* Internal: the environment a caller's host forwards to airlockd with a
 * run (the remote provider's X-Airlock-Forwarded-Env header, docs/api.md):
 * base64 of a JSON object {"NAME": "value", ...}.  The values are secrets:
 * they are never echoed, and every copy is wiped when freed. */
#ifndef AL_HOST_FORWARDED_ENV_H
#define AL_HOST_FORWARDED_ENV_H

#include <stddef.h>

#include <airlock/json.h>

/* Bounds: entries, and bytes of the decoded JSON object (public: the
 * remote provider builds the header within them). */
#define AL_FWD_ENV_MAX AL_MAX_FORWARDED_ENV
#define AL_FWD_ENV_MAX_BYTES AL_MAX_FORWARDED_ENV_BYTES

/* Decodes and checks a header value into "NAME=value" strings (*env, *n;
 * free with al_secrets_env_free).  Names follow the request env's rules
 * (valid, not reserved, no duplicates); values are text without NUL.
 * 0, or -EINVAL with *why a fixed phrase naming no value, or -ENOMEM. */
int al_forwarded_env_parse(const char *header, char ***env, size_t *n,
			   const char **why);

#endif
