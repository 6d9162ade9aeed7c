/* Internal: the built-in providers' operation tables. */
#ifndef AL_PROVIDERS_BUILTIN_H
#define AL_PROVIDERS_BUILTIN_H

#include <airlock/provider.h>

#include "providers/cache_dir.h"

extern const al_provider_ops al_disabled_provider;
extern const al_provider_ops al_local_provider;
extern const al_provider_ops al_container_provider;

#endif
