/* Internal: bearer tokens → tenants (docs/serve.md, "Authentication").
 *
 * Only SHA-256 hashes of tokens are held; a presented token is hashed and
 * compared against every entry in constant time. */
#ifndef AL_SERVER_AUTH_H
#define AL_SERVER_AUTH_H

#include <stddef.h>

#include <airlock/error.h>
#include <airlock/host.h>

typedef struct al_auth al_auth;

/* Reads the configuration's "tokens" object (sha256 hex → tenant) from the
 * configuration text.  *out is NULL (and 0 returned) when the file has no
 * tokens.  Each tenant must be configured; a bad entry fails with
 * AL_ERR_INVALID_CONFIG naming the key path ("tokens.<n>"), never a hash. */
int al_auth_from_config(const char *json, size_t len, const al_config *cfg,
			al_auth **out, al_error **err);
/* The generated token of tenant "default": STATE_DIR/token, created once
 * (32 random bytes as hex, mode 0600, O_EXCL) and reused afterwards.
 * *path_out (caller frees) names the file. */
int al_auth_default_token(const char *state_dir, al_auth **out,
			  char **path_out, al_error **err);
void al_auth_free(al_auth *auth);
/* The tenant of an "Authorization: Bearer <token>" header value, or NULL.
 * The returned string lives as long as auth.  principal (when non-NULL)
 * receives "token:" and the first 12 hex digits of the token's hash: who
 * asked, for the audit trail, without the token. */
#define AL_AUTH_PRINCIPAL_LEN 24
const char *al_auth_tenant(const al_auth *auth, const char *authorization,
			   char principal[AL_AUTH_PRINCIPAL_LEN]);
/* Some tenant that holds a token (for health checks); NULL if none. */
const char *al_auth_any_tenant(const al_auth *auth);

#endif
