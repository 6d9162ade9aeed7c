/* Internal: request fields beyond the core ones (docs/contract.md):
 * "name" (AIRLOCK_SCRIPT_NAME), "exec" (the execution shape that runs an
 * argv instead of code) and "continues" (carry-over of a durable run's
 * unacknowledged inbox events).  Kept apart from the core request reader
 * so each field's rules live in one place. */
#ifndef AL_JSON_REQUEST_FIELDS_H
#define AL_JSON_REQUEST_FIELDS_H

#include <jansson.h>

#include <airlock/contract.h>

#include "json/field_codec.h"

/* The pseudo-language of an exec request. */
#define AL_EXEC_LANGUAGE "exec"

/* "exec": read before language and code.  With exec: no code,
 * code_sha256 or argv; language absent or "exec"; 1..AL_MAX_ARGS strings,
 * no NUL, the first a non-empty program of at most 4096 bytes without
 * control bytes.  Sets req->exec and req->language.  Reasons: "exec",
 * "exec[i]", "argv", "language". */
int al_request_parse_exec(const jf_ctx *c, const json_t *root,
			  al_request *req);
/* "name": optional string or null, a plain file name
 * (al_syntax_file_name).  Reason "name" on error. */
int al_request_parse_name(const jf_ctx *c, const json_t *root,
			  al_request *req);
/* "continues": optional run id (1..39 of [A-Za-z0-9-]) or null. */
int al_request_parse_continues(const jf_ctx *c, const json_t *root,
			       al_request *req);
/* Adds this file's fields to the canonical JSON object (and takes code,
 * code_sha256 and argv out of an exec request's). */
int al_request_emit_fields(json_t *root, const al_request *req);

#endif
