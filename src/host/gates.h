/* Internal: the host's gates (steps 3-5 of the pipeline). */
#ifndef AL_HOST_GATES_H
#define AL_HOST_GATES_H

#include "host/config.h"

/* Each returns NULL when the gate is open, or the refusal's reason token
 * ("gate:language", "gate:grant", "gate:ceiling:<limit>"). */
const char *al_gate_language(const al_cfg_tenant *t, const al_request *req);
/* code_sha256: the host's own hash of the request's code. */
const char *al_gate_grant(const al_cfg_tenant *t, const al_request *req,
			  const char code_sha256[65]);
/* Checks every limit against the tenant's ceilings.  A limit the request
 * left unset whose default exceeds a ceiling (0 = unlimited counts as
 * exceeding) is lowered to the ceiling in `limits`; an explicit limit over
 * a ceiling closes the gate.  `buf` holds the returned token. */
const char *al_gate_ceilings(const al_cfg_tenant *t, al_limits *limits,
			     char *buf, size_t buflen);

#endif
