/* Internal: JSON of the build and judged-test parts of requests and
 * results (called by request_parse.c, request_emit.c, result_json.c). */
#ifndef AL_JSON_BUILD_JSON_H
#define AL_JSON_BUILD_JSON_H

#include <jansson.h>

#include <airlock/contract.h>

#include "json/field_codec.h"

/* The same bound as the language adapter's allow-list check. */
#define AL_MAX_BUILD_FLAGS_JSON 16

/* limits.build, build_flags, compare, tests of a request object whose
 * other fields were read (its "limits" keys already checked). */
int al_build_request_parse(const jf_ctx *c, const json_t *root,
			   al_request *req);
/* Adds them to an emitted request object (after its "limits"). */
int al_build_request_emit(json_t *root, const al_request *req);
/* "build" and "tests" of a result. */
int al_build_result_emit(json_t *root, const al_result *r);
int al_build_result_parse(const jf_ctx *c, const json_t *root, al_result *r);

#endif
