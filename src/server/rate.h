/* Internal: request-rate limits (docs/configuration.md, a tenant's
 * "request_rate"; docs/compat.md, "anonymous_rate"). */
#ifndef AL_SERVER_RATE_H
#define AL_SERVER_RATE_H

#include "server/service.h"

/* Takes one request from key's window: at most `requests` per `per_s`
 * seconds.  0 when allowed, else the seconds until the window reopens
 * (for Retry-After). */
unsigned al_srv_rate_take(const char *key, unsigned requests, unsigned per_s);
/* The same for tenant's configured request_rate (0 when it has none). */
unsigned al_srv_tenant_rate(al_service *svc, const char *tenant);

#endif
