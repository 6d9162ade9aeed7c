/* Internal: where providers keep observation caches; shared by every
 * provider that caches (local, sandbox). */
#ifndef AL_PROVIDERS_CACHE_DIR_H
#define AL_PROVIDERS_CACHE_DIR_H

/* $AIRLOCK_CACHE_DIR, else /var/cache/airlock for root, else
 * $XDG_CACHE_HOME/airlock (or ~/.cache/airlock).  Created 0700 when
 * missing; NULL when none is usable (callers then observe without a disk
 * cache).  Caller frees. */
char *al_provider_cache_dir(void);

#endif
