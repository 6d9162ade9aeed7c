/* Parses a forwarded environment (host/forwarded_env.h).  Every buffer
 * that held a value is wiped before it is freed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <airlock/json.h>

#include "core/util.h"
#include "host/forwarded_env.h"
#include "host/secrets.h"
#include "json/base64.h"
#include "json/syntax.h"


int al_forwarded_env_parse(const char *header, char ***env, size_t *n,
			   const char **why)
{
	size_t hl = strlen(header), raw_len = 0, count = 0;
	unsigned char *raw = NULL;
	json_t *root = NULL, *v;
	char **out = NULL;
	const char *key;
	int rc;

	*env = NULL;
	*n = 0;
	*why = "forwarded_env";
	if (hl > (AL_FWD_ENV_MAX_BYTES + 2) / 3 * 4)
		return -EINVAL;
	if ((rc = al_base64_decode(header, hl, &raw, &raw_len)) < 0)
		return rc;
	rc = -EINVAL;
	if (raw_len > AL_FWD_ENV_MAX_BYTES)
		goto out;
	root = json_loadb((const char *)raw, raw_len, JSON_REJECT_DUPLICATES,
			  NULL);
	if (!json_is_object(root) || json_object_size(root) == 0 ||
	    json_object_size(root) > AL_FWD_ENV_MAX)
		goto out;
	if ((out = calloc(json_object_size(root), sizeof(*out))) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	json_object_foreach(root, key, v)
	{
		size_t kl = strlen(key);
		if (al_syntax_env_name(key, kl) != NULL ||
		    al_env_name_reserved(key) || !json_is_string(v) ||
		    json_string_length(v) > AL_MAX_ENV_VALUE_BYTES ||
		    memchr(json_string_value(v), '\0', json_string_length(v)))
			goto out;
		if ((out[count] = al_strdup_printf("%s=%s", key,
						   json_string_value(v))) ==
		    NULL) {
			rc = -ENOMEM;
			goto out;
		}
		count++;
	}
	*env = out;
	*n = count;
	out = NULL;
	rc = 0;
out:
	al_secrets_env_free(out, count);
	/* jansson keeps the values in its own buffers: wipe them too. */
	json_object_foreach(root, key, v)
	{
		if (json_is_string(v))
			explicit_bzero((char *)json_string_value(v),
					json_string_length(v));
	}
	json_decref(root);
	if (raw != NULL) {
		explicit_bzero(raw, raw_len + 1);
		free(raw);
	}
	return rc;
}
