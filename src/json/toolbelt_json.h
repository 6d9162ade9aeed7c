/* Internal: the toolbelt's fields in the request's grant and in the
 * result (docs/toolbelt.md). */
#ifndef AL_JSON_TOOLBELT_JSON_H
#define AL_JSON_TOOLBELT_JSON_H

#include <stdbool.h>

#include <jansson.h>

#include <airlock/contract.h>

#include "json/field_codec.h"

/* At most this many operations in a grant. */
#define AL_MAX_GRANT_OPERATIONS 64u

/* [A-Za-z0-9_.:-]{1,64}: operation names, event types, request ids and
 * declared reasons. */
bool al_tool_name_valid(const char *s);

/* grant.toolbelt and grant.operations (sorted, no duplicates). */
int al_toolbelt_grant_parse(const jf_ctx *c, const json_t *grant,
			    al_grant *g);
/* Adds them to a grant object, only when set: a request without them
 * prints (and hashes) as before. */
int al_toolbelt_grant_emit(json_t *o, const al_grant *g);
int al_toolbelt_grant_dup(const al_grant *src, al_grant *dst);
void al_toolbelt_grant_free(al_grant *g);

/* The facts' "toolbelt", "inject", "interrupt" (each only when true) and
 * "host_api" (only when not empty). */
int al_toolbelt_facts_emit(json_t *o, const al_facts *f);
int al_toolbelt_facts_parse(const jf_ctx *c, const json_t *root,
			    al_facts *f);
int al_toolbelt_facts_copy(const al_facts *src, al_facts *dst);
/* Clears them (and frees host_api). */
void al_toolbelt_facts_drop(al_facts *f);
/* Sets host_api to a copy of names. */
int al_toolbelt_facts_set_host_api(al_facts *f, char *const *names,
				   size_t n);

/* The result's "events", "declaration" and "host_calls", when present. */
int al_toolbelt_result_emit(json_t *o, const al_result *r);
int al_toolbelt_result_parse(const jf_ctx *c, const json_t *root,
			     al_result *r);
void al_toolbelt_result_free(al_result *r);

#endif
