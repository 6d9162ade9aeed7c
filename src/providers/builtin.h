/* Internal: the built-in providers' operation tables. */
#ifndef AL_PROVIDERS_BUILTIN_H
#define AL_PROVIDERS_BUILTIN_H

#include <airlock/provider.h>

extern const al_provider_ops al_disabled_provider;
extern const al_provider_ops al_local_provider;
extern const al_provider_ops al_container_provider;

/* Where providers keep observation caches: $AIRLOCK_CACHE_DIR, else
 * /var/cache/airlock for root, else $XDG_CACHE_HOME/airlock (or
 * ~/.cache/airlock).  Created 0700 when missing; NULL when none is usable
 * (callers then observe without a disk cache).  Caller frees. */
char *al_provider_cache_dir(void);

#endif
