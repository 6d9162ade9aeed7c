/* The request's fields beyond the core ones (json/request_fields.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/json.h>

#include "json/request_fields.h"
#include "json/syntax.h"

#define AL_MAX_EXEC_PROGRAM_BYTES 4096u

static int oom(const jf_ctx *c, const char *path)
{
	return al_error_set(c->err, AL_ERR_INTERNAL, ENOMEM, path,
			    "out of memory");
}

int al_request_parse_exec(const jf_ctx *c, const json_t *root,
			  al_request *req)
{
	const json_t *v = json_object_get(root, "exec");
	const json_t *lang = json_object_get(root, "language");
	const json_t *argv = json_object_get(root, "argv");
	if (v == NULL) {
		if (json_is_string(lang) &&
		    strcmp(json_string_value(lang), AL_EXEC_LANGUAGE) == 0)
			return jf_fail(c, "language", "\"exec\" names the exec "
						      "shape: give exec, not "
						      "code");
		return 0;
	}
	if (json_object_get(root, "code") != NULL ||
	    json_object_get(root, "code_sha256") != NULL)
		return jf_fail(c, "exec", "and code are exclusive: give "
					  "exactly one");
	if (argv != NULL && !(json_is_array(argv) && json_array_size(argv) == 0))
		return jf_fail(c, "argv", "is part of exec: give the whole "
					  "argv there");
	if (lang != NULL && !(json_is_string(lang) &&
			      strcmp(json_string_value(lang),
				     AL_EXEC_LANGUAGE) == 0))
		return jf_fail(c, "language", "must be absent or \"exec\" "
					      "with exec");
	if (!json_is_array(v) || json_array_size(v) == 0)
		return jf_fail(c, "exec", "must be a non-empty array of "
					  "strings");
	size_t n = json_array_size(v);
	if (n > AL_MAX_ARGS)
		return jf_fail(c, "exec", "has more than %u items",
			       AL_MAX_ARGS);
	if ((req->exec = calloc(n + 1, sizeof(char *))) == NULL)
		return oom(c, "exec");
	for (size_t i = 0; i < n; i++) {
		char path[32];
		const char *s;
		size_t len;
		int rc;
		snprintf(path, sizeof(path), "exec[%zu]", i);
		rc = jf_string(c, json_array_get(v, i), path,
			       i == 0 ? AL_MAX_EXEC_PROGRAM_BYTES
				      : AL_MAX_ARG_BYTES,
			       i == 0 ? JF_NONEMPTY : 0, &s, &len);
		if (rc < 0)
			return rc;
		if (i == 0 && !al_syntax_printable(s, len,
						   AL_MAX_EXEC_PROGRAM_BYTES))
			return jf_fail(c, path, "must be printable ASCII");
		if ((req->exec[i] = strdup(s)) == NULL)
			return oom(c, path);
		req->n_exec = i + 1;
	}
	free(req->language);
	if ((req->language = strdup(AL_EXEC_LANGUAGE)) == NULL)
		return oom(c, "language");
	return 0;
}

int al_request_parse_name(const jf_ctx *c, const json_t *root,
			  al_request *req)
{
	const json_t *v = json_object_get(root, "name");
	const char *s, *why;
	size_t n;
	int rc;
	if (v == NULL || json_is_null(v))
		return 0;
	if ((rc = jf_string(c, v, "name", 255, JF_NONEMPTY, &s, &n)) < 0)
		return rc;
	if ((why = al_syntax_file_name(s, n)) != NULL)
		return jf_fail(c, "name", "%s", why);
	if ((req->name = strdup(s)) == NULL)
		return oom(c, "name");
	return 0;
}

int al_request_parse_continues(const jf_ctx *c, const json_t *root,
			       al_request *req)
{
	const json_t *v = json_object_get(root, "continues");
	const char *s;
	size_t n;
	int rc;
	if (v == NULL || json_is_null(v))
		return 0;
	if ((rc = jf_string(c, v, "continues", 39, JF_NONEMPTY, &s, &n)) < 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return jf_fail(c, "continues", "must be a run id");
	if ((req->continues = strdup(s)) == NULL)
		return oom(c, "continues");
	return 0;
}

int al_request_emit_fields(json_t *root, const al_request *req)
{
	/* Each is written only when given, so requests without them keep
	 * the canonical text (and idempotency hashes) they always had. */
	if (req->name != NULL && jf_set(root, "name", json_string(req->name)) < 0)
		return -ENOMEM;
	if (req->continues != NULL &&
	    jf_set(root, "continues", json_string(req->continues)) < 0)
		return -ENOMEM;
	if (req->exec != NULL) {
		json_object_del(root, "code");
		json_object_del(root, "code_sha256");
		json_object_del(root, "argv");
		if (jf_set(root, "exec", jf_strings(req->exec, req->n_exec)) < 0)
			return -ENOMEM;
	}
	return 0;
}
