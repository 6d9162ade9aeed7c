/* Internal: Piston's request translation and stage objects, shared by
 * POST /api/v2/execute and the WebSocket of /api/v2/connect. */
#ifndef AL_SERVER_COMPAT_PISTON_H
#define AL_SERVER_COMPAT_PISTON_H

#include "server/compat.h"
#include "server/compat_names.h"

/* The /v1 request of a Piston execute body (or connect init message);
 * NULL with *status and why[why_len] filled. */
json_t *al_compat_piston_translate(const al_compat_req *q, json_t *in,
				   const al_compat_lang **lang,
				   const char **version, json_t *langs,
				   unsigned *status, char *why, size_t why_len);
/* A stage object ({stdout, stderr, output, code, signal, message, status,
 * cpu_time, wall_time, memory}) of a result or its build object. */
json_t *al_compat_piston_stage(const json_t *r,
			       const unsigned char *interleaved,
			       size_t il_len);

#endif
