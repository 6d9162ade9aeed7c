/* Internal: JSON pieces shared by the result and facts forms. */
#ifndef AL_JSON_CONTRACT_JSON_H
#define AL_JSON_CONTRACT_JSON_H

#include <jansson.h>

#include <airlock/contract.h>

#include "json/field_codec.h"

/* {"process_contained": ..., ...} with all five axes. */
json_t *al_isolation_to_json(const al_isolation_axes *axes);
/* Strict: an object with only the five boolean axes (missing ones false). */
int al_isolation_from_json(const jf_ctx *c, const json_t *v, const char *path,
			   al_isolation_axes *axes);
/* A string naming a safety class. */
int al_safety_from_json(const jf_ctx *c, const json_t *v, const char *path,
			al_safety_class *out);

#endif
