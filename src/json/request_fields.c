/* The request's presentation fields (json/request_fields.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json/request_fields.h"
#include "json/syntax.h"

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
		return al_error_set(c->err, AL_ERR_INTERNAL, ENOMEM, "name",
				    "out of memory");
	return 0;
}

int al_request_emit_fields(json_t *root, const al_request *req)
{
	/* Written only when given, so requests without them keep the
	 * canonical text (and idempotency hashes) they always had. */
	if (req->name != NULL && jf_set(root, "name", json_string(req->name)) < 0)
		return -ENOMEM;
	return 0;
}
