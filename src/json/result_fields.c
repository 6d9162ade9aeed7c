/* The result's fields beyond the core ones (json/result_fields.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/json.h>

#include "json/result_fields.h"
#include "json/syntax.h"

static int oom(const jf_ctx *c, const char *path)
{
	return al_error_set(c->err, AL_ERR_INTERNAL, ENOMEM, path,
			    "out of memory");
}

static json_t *workspace_json(const al_result *r)
{
	json_t *o = json_object();
	if (o == NULL || jf_set(o, "kind", json_string(r->workspace_kind)) < 0 ||
	    jf_set(o, "size_bytes",
		   json_integer((json_int_t)r->workspace_bytes)) < 0 ||
	    jf_set(o, "summary", jf_string_or_null(r->workspace_summary)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

int al_result_emit_fields(json_t *o, const al_result *r)
{
	if (r->workspace_kind != NULL &&
	    jf_set(o, "workspace", workspace_json(r)) < 0)
		return -ENOMEM;
	if (r->timeout_ms > 0 &&
	    jf_set(o, "timeout_ms", json_integer((json_int_t)r->timeout_ms)) < 0)
		return -ENOMEM;
	if (r->log_artifact != NULL &&
	    jf_set(o, "log_artifact", json_string(r->log_artifact)) < 0)
		return -ENOMEM;
	if (r->n_inbox_pending > 0 &&
	    jf_set(o, "inbox_pending",
		   jf_strings(r->inbox_pending, r->n_inbox_pending)) < 0)
		return -ENOMEM;
	return 0;
}

static int text(const jf_ctx *c, const json_t *v, const char *path,
		size_t max, char **out)
{
	const char *s;
	size_t n;
	int rc = jf_string(c, v, path, max, JF_NONEMPTY, &s, &n);
	if (rc < 0)
		return rc;
	if (!al_syntax_printable(s, n, max))
		return jf_fail(c, path, "must be printable ASCII");
	if ((*out = strdup(s)) == NULL)
		return oom(c, path);
	return 0;
}

static const char *const ws_keys[] = {"kind", "size_bytes", "summary", NULL};

static int parse_workspace(const jf_ctx *c, const json_t *v, al_result *r)
{
	int rc;
	const json_t *e;
	if (!json_is_object(v))
		return jf_fail(c, "workspace", "must be an object");
	if ((rc = jf_only_keys(c, v, "workspace", ws_keys)) < 0)
		return rc;
	if ((e = json_object_get(v, "kind")) == NULL)
		return jf_fail(c, "workspace.kind", "is required");
	if ((rc = text(c, e, "workspace.kind", 32, &r->workspace_kind)) < 0)
		return rc;
	if ((e = json_object_get(v, "size_bytes")) != NULL &&
	    (rc = jf_uint(c, e, "workspace.size_bytes", 0, INT64_MAX,
			  &r->workspace_bytes)) < 0)
		return rc;
	if ((e = json_object_get(v, "summary")) != NULL && !json_is_null(e) &&
	    (rc = text(c, e, "workspace.summary", 256,
		       &r->workspace_summary)) < 0)
		return rc;
	return 0;
}

static int parse_pending(const jf_ctx *c, const json_t *v, al_result *r)
{
	if (!json_is_array(v))
		return jf_fail(c, "inbox_pending", "must be an array");
	size_t n = json_array_size(v);
	if (n > AL_MAX_INBOX_EVENTS)
		return jf_fail(c, "inbox_pending", "has more than %u items",
			       AL_MAX_INBOX_EVENTS);
	if (n == 0)
		return 0;
	if ((r->inbox_pending = calloc(n, sizeof(char *))) == NULL)
		return oom(c, "inbox_pending");
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(v, i);
		char p[32];
		snprintf(p, sizeof(p), "inbox_pending[%zu]", i);
		if (!json_is_string(e) ||
		    strlen(json_string_value(e)) != json_string_length(e) ||
		    !al_inbox_id_valid(json_string_value(e)))
			return jf_fail(c, p, "must be an inbox event id");
		if ((r->inbox_pending[i] = strdup(json_string_value(e))) == NULL)
			return oom(c, p);
		r->n_inbox_pending = i + 1;
	}
	return 0;
}

int al_result_parse_fields(const jf_ctx *c, const json_t *root,
			   al_result *r)
{
	const json_t *v;
	int rc;
	if ((v = json_object_get(root, "workspace")) != NULL &&
	    !json_is_null(v) && (rc = parse_workspace(c, v, r)) < 0)
		return rc;
	if ((v = json_object_get(root, "timeout_ms")) != NULL &&
	    (rc = jf_uint(c, v, "timeout_ms", 0, INT64_MAX, &r->timeout_ms)) <
		    0)
		return rc;
	if ((v = json_object_get(root, "log_artifact")) != NULL &&
	    !json_is_null(v) &&
	    (rc = text(c, v, "log_artifact", 32, &r->log_artifact)) < 0)
		return rc;
	if ((v = json_object_get(root, "inbox_pending")) != NULL &&
	    (rc = parse_pending(c, v, r)) < 0)
		return rc;
	return 0;
}
