/* Internal: result fields beyond the core ones (docs/contract.md,
 * "Result"): "workspace", "timeout_ms", "log_artifact" and
 * "inbox_pending".  Each is written only when known, after the others. */
#ifndef AL_JSON_RESULT_FIELDS_H
#define AL_JSON_RESULT_FIELDS_H

#include <jansson.h>

#include <airlock/contract.h>

#include "json/field_codec.h"

#define AL_RESULT_FIELD_KEYS "workspace", "timeout_ms", "log_artifact", \
	"inbox_pending"

int al_result_emit_fields(json_t *o, const al_result *r);
int al_result_parse_fields(const jf_ctx *c, const json_t *root,
			   al_result *r);

#endif
