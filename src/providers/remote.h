/* The `remote` provider: runs on another airlockd over its HTTP API
 * (docs/serve.md, "The remote provider"). */
#ifndef AL_PROVIDERS_REMOTE_H
#define AL_PROVIDERS_REMOTE_H

#include <airlock/provider.h>

extern const al_provider_ops al_remote_provider;
extern const al_provider_ops al_remote_provider_module;

#endif
