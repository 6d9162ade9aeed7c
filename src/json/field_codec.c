/* Strict JSON field access; see field_codec.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/json.h>

#include "json/base64.h"
#include "json/field_codec.h"

void jf_report(const jf_ctx *c, const char *path, const char *fmt, ...)
{
	char text[200];
	va_list ap;
	va_start(ap, fmt);
	/* clang-analyzer 14 misreads glibc's va_start here (false positive) */
	vsnprintf(text, sizeof(text), fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
	va_end(ap);
	al_error_set(c->err, c->code, EINVAL, path, "%s %s", path, text);
}

/* jansson's own error text quotes the input near the error, so only the
 * error class and position are reported. */
static const char *load_error_text(enum json_error_code code)
{
	switch (code) {
	case json_error_invalid_utf8:
		return "is not valid UTF-8";
	case json_error_premature_end_of_input:
		return "ends before the JSON value does";
	case json_error_end_of_input_expected:
		return "has data after the JSON value";
	case json_error_null_character:
		return "has a NUL byte outside a string";
	case json_error_null_byte_in_key:
		return "has a NUL byte in an object key";
	case json_error_duplicate_key:
		return "has a duplicate object key";
	case json_error_numeric_overflow:
		return "has a number out of range";
	case json_error_stack_overflow:
		return "is nested too deeply";
	default:
		return "is not valid JSON";
	}
}

static bool deeper_than(const json_t *v, unsigned depth, unsigned max)
{
	if (!json_is_object(v) && !json_is_array(v))
		return false;
	if (depth + 1 > max)
		return true;
	if (json_is_array(v)) {
		size_t i;
		const json_t *item;
		json_array_foreach(v, i, item) {
			if (deeper_than(item, depth + 1, max))
				return true;
		}
		return false;
	}
	const char *key;
	const json_t *item;
	json_object_foreach((json_t *)v, key, item) {
		if (deeper_than(item, depth + 1, max))
			return true;
	}
	return false;
}

int jf_load(const jf_ctx *c, const char *json, size_t len, size_t max_len,
	    json_t **out)
{
	*out = NULL;
	if (json == NULL)
		return jf_fail(c, "body", "is missing");
	if (len > max_len)
		return jf_fail(c, "body", "is larger than %zu bytes", max_len);
	/* A raw NUL byte is never JSON, but jansson 2.14 skips one that
	 * follows a number ("[1\0]" loads as [1]). */
	if (memchr(json, '\0', len) != NULL)
		return jf_fail(c, "body", "%s",
			       load_error_text(json_error_null_character));
	json_error_t jerr;
	json_t *root = json_loadb(json, len,
				  JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (root == NULL) {
		if (json_error_code(&jerr) == json_error_out_of_memory)
			return al_error_set(c->err, AL_ERR_INTERNAL, ENOMEM,
					    "body", "out of memory parsing JSON");
		return jf_fail(c, "body", "%s (line %d, column %d)",
			       load_error_text(json_error_code(&jerr)),
			       jerr.line, jerr.column);
	}
	if (!json_is_object(root)) {
		json_decref(root);
		return jf_fail(c, "body", "must be a JSON object");
	}
	if (deeper_than(root, 0, AL_MAX_JSON_DEPTH)) {
		json_decref(root);
		return jf_fail(c, "body", "is nested deeper than %u levels",
			       AL_MAX_JSON_DEPTH);
	}
	*out = root;
	return 0;
}

int jf_only_keys(const jf_ctx *c, const json_t *obj, const char *path,
		 const char *const *allowed)
{
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)obj, key, v) {
		bool known = false;
		for (size_t i = 0; allowed[i] != NULL && !known; i++)
			known = strcmp(allowed[i], key) == 0;
		if (!known)
			return jf_fail(c, path, "has an unknown field");
	}
	return 0;
}

int jf_string(const jf_ctx *c, const json_t *v, const char *path, size_t max,
	      unsigned flags, const char **s, size_t *len)
{
	if (!json_is_string(v))
		return jf_fail(c, path, "must be a string");
	size_t n = json_string_length(v);
	const char *p = json_string_value(v);
	if (n > max)
		return jf_fail(c, path, "is longer than %zu bytes", max);
	if ((flags & JF_NONEMPTY) && n == 0)
		return jf_fail(c, path, "must not be empty");
	if (!(flags & JF_ALLOW_NUL) && memchr(p, '\0', n) != NULL)
		return jf_fail(c, path, "must not contain a NUL byte");
	*s = p;
	if (len != NULL)
		*len = n;
	return 0;
}

int jf_uint(const jf_ctx *c, const json_t *v, const char *path, uint64_t min,
	    uint64_t max, uint64_t *out)
{
	if (!json_is_integer(v))
		return jf_fail(c, path, "must be an integer");
	json_int_t n = json_integer_value(v);
	if (n < 0 || (uint64_t)n < min || (uint64_t)n > max)
		return jf_fail(c, path, "must be between %llu and %llu",
			       (unsigned long long)min,
			       (unsigned long long)max);
	*out = (uint64_t)n;
	return 0;
}

int jf_int(const jf_ctx *c, const json_t *v, const char *path, int64_t min,
	   int64_t max, int64_t *out)
{
	if (!json_is_integer(v))
		return jf_fail(c, path, "must be an integer");
	json_int_t n = json_integer_value(v);
	if (n < min || n > max)
		return jf_fail(c, path, "must be between %lld and %lld",
			       (long long)min, (long long)max);
	*out = n;
	return 0;
}

int jf_bool(const jf_ctx *c, const json_t *v, const char *path, bool *out)
{
	if (!json_is_boolean(v))
		return jf_fail(c, path, "must be true or false");
	*out = json_is_true(v);
	return 0;
}

int jf_bytes(const jf_ctx *c, const json_t *obj, const char *key,
	     const char *key_b64, const char *path_text, const char *path_b64,
	     size_t max, al_bytes *out, bool *present)
{
	const json_t *text = json_object_get(obj, key);
	const json_t *b64 = json_object_get(obj, key_b64);
	if (json_is_null(text))
		text = NULL;
	if (json_is_null(b64))
		b64 = NULL;
	const char *s;
	size_t n;
	unsigned char *data = NULL;
	size_t data_len = 0;
	int rc;

	*present = text != NULL || b64 != NULL;
	if (text != NULL && b64 != NULL)
		return jf_fail(c, path_text, "and %s are both given", path_b64);
	if (text != NULL) {
		rc = jf_string(c, text, path_text, max, JF_ALLOW_NUL, &s, &n);
		if (rc < 0)
			return rc;
		data = malloc(n + 1);
		if (data == NULL)
			return al_error_set(c->err, AL_ERR_INTERNAL, ENOMEM,
					    path_text, "out of memory");
		memcpy(data, s, n);
		data[n] = '\0';
		data_len = n;
	} else if (b64 != NULL) {
		/* Bound the text before decoding it. */
		rc = jf_string(c, b64, path_b64, (max + 2) / 3 * 4, 0, &s, &n);
		if (rc < 0)
			return rc;
		rc = al_base64_decode(s, n, &data, &data_len);
		if (rc == -ENOMEM)
			return al_error_set(c->err, AL_ERR_INTERNAL, ENOMEM,
					    path_b64, "out of memory");
		if (rc < 0)
			return jf_fail(c, path_b64,
				       "is not padded standard base64");
		if (data_len > max) {
			free(data);
			return jf_fail(c, path_b64,
				       "decodes to more than %zu bytes", max);
		}
	} else {
		data = calloc(1, 1);
		if (data == NULL)
			return al_error_set(c->err, AL_ERR_INTERNAL, ENOMEM,
					    path_text, "out of memory");
	}
	free(out->data);
	out->data = data;
	out->len = data_len;
	return 0;
}

bool jf_bytes_are_text(const al_bytes *b)
{
	if (b->len == 0)
		return true;
	return memchr(b->data, '\0', b->len) == NULL &&
	       al_utf8_valid(b->data, b->len);
}

int jf_set(json_t *obj, const char *key, json_t *value)
{
	if (value == NULL)
		return -ENOMEM;
	return json_object_set_new(obj, key, value) == 0 ? 0 : -ENOMEM;
}

json_t *jf_string_or_null(const char *s)
{
	return s != NULL ? json_string(s) : json_null();
}

json_t *jf_strings(char *const *v, size_t n)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr != NULL && i < n; i++)
		if (json_array_append_new(arr, json_string(v[i])) < 0) {
			json_decref(arr);
			return NULL;
		}
	return arr;
}

int jf_set_bytes(json_t *obj, const char *key, const char *key_b64,
		 const al_bytes *b)
{
	if (jf_bytes_are_text(b))
		return jf_set(obj, key,
			      json_stringn(b->len ? (const char *)b->data : "",
					   b->len));
	char *enc = al_base64_encode(b->data, b->len);
	if (enc == NULL)
		return -ENOMEM;
	int rc = jf_set(obj, key_b64, json_string(enc));
	free(enc);
	return rc;
}

char *jf_dump(const json_t *root, size_t flags)
{
	return json_dumps(root, flags);
}
