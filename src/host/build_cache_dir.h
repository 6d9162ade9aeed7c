/* Internal: the build cache's place in the state dir. */
#ifndef AL_HOST_BUILD_CACHE_DIR_H
#define AL_HOST_BUILD_CACHE_DIR_H

#include <stdbool.h>

/* STATE_DIR/build-cache/t-<first 24 hex of SHA-256(tenant)>, or
 * STATE_DIR/build-cache/shared when configured shared (docs/languages.md); created 0700 without following a
 * link and checked to be ours and private.  NULL when it cannot be
 * (the run then builds without a cache). */
char *al_host_build_cache_dir(const char *state_dir, const char *tenant,
			      bool shared);

#endif
