/* Internal: request fields that shape how the program is presented
 * (docs/contract.md): "name" (AIRLOCK_SCRIPT_NAME).  Kept apart from the
 * core request reader so each field's rules live in one place. */
#ifndef AL_JSON_REQUEST_FIELDS_H
#define AL_JSON_REQUEST_FIELDS_H

#include <jansson.h>

#include <airlock/contract.h>

#include "json/jfield.h"

/* "name": optional string or null, a plain file name
 * (al_syntax_file_name).  Reason "name" on error. */
int al_request_parse_name(const jf_ctx *c, const json_t *root,
			  al_request *req);
/* Adds this file's fields to the canonical JSON object. */
int al_request_emit_fields(json_t *root, const al_request *req);

#endif
