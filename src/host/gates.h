/* Internal: the host's gates (steps 3-5 of the pipeline). */
#ifndef AL_HOST_GATES_H
#define AL_HOST_GATES_H

#include "host/config.h"

/* Each returns NULL when the gate is open, or the refusal's reason token
 * ("gate:language", "gate:env:<pattern>", "gate:grant",
 * "gate:ceiling:<limit>"). */
const char *al_gate_language(const al_cfg_tenant *t, const al_request *req);
/* A named container image must be on the tenant's "images" list. */
const char *al_gate_image(const al_cfg_tenant *t, const al_request *req);
/* The env policy (host/env_policy.h) over the request's variables and
 * those a caller forwarded ("NAME=value"): a variable the table covers
 * and the tenant's env_allow does not name closes the gate.  The token
 * names the table's pattern, never the request's name or value; `buf`
 * holds it. */
const char *al_gate_env(const al_cfg_tenant *t, const al_request *req,
			char *const *fwd_env, size_t n_fwd, char *buf,
			size_t buflen);
/* code_sha256 and plan_sha256: the host's own hashes of the request's
 * code and of its execution plan (host/plan.h). */
const char *al_gate_grant(const al_cfg_tenant *t, const al_request *req,
			  const char code_sha256[65],
			  const char plan_sha256[65]);
/* Checks every limit, and the argv and env sizes, against the tenant's
 * ceilings.  A limit the request left unset whose default exceeds its
 * ceiling (0 = none counts as exceeding; memory and pids then take
 * AL_CFG_UNSET_* when that is lower) is lowered in req->limits and its
 * bit added to *lowered — and to *soft when the ceiling is a built-in one
 * (a provider that cannot enforce that limit may still run the request,
 * docs/host.md).  An explicit limit over a ceiling closes the gate.
 * `buf` holds the returned token. */
const char *al_gate_ceilings(const al_cfg_tenant *t, al_request *req,
			     unsigned *lowered, unsigned *soft, char *buf,
			     size_t buflen);

#endif
