/* Internal: host operations a run's toolbelt may call (docs/toolbelt.md,
 * "Host operations").  A tenant's configuration defines them by name:
 *
 *   "operations": {
 *     "notify": {"kind": "webhook", "url": "http://127.0.0.1:9000/hook",
 *                "timeout_ms": 5000, "max_response_bytes": 65536},
 *     "lookup": {"kind": "module", "path": "/usr/lib/x/op.so",
 *                "symbol": "airlock_operation"}}
 *
 * and a grant names those a request may ask for. */
#ifndef AL_HOST_OPERATIONS_H
#define AL_HOST_OPERATIONS_H

#include <jansson.h>

#include <airlock/contract.h>
#include <airlock/error.h>

#define AL_OP_DEFAULT_TIMEOUT_MS 5000u
#define AL_OP_MAX_TIMEOUT_MS 30000u
#define AL_OP_MAX_URL 2048u
#define AL_OP_MAX_OPERATIONS 64u

/* Checks a tenant's "operations" object and returns it, with every
 * default filled in, as compact JSON text (*out; caller frees). */
int al_operations_parse(json_t *v, const char *path, char **out,
			al_error **err);
/* 1 when the definitions (text from al_operations_parse, or NULL) name
 * this operation. */
int al_operations_defined(const char *ops_json, const char *name);
/* The definitions of the operations the grant names, as compact JSON
 * text (*out; NULL when it names none). */
int al_operations_subset(const char *ops_json, const al_grant *g, char **out);

#endif
