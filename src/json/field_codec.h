/* Internal: strict reading and writing of JSON fields with jansson.
 *
 * Every failure names a field path (never a value) through al_error; the
 * error code is the caller's (AL_ERR_INVALID_REQUEST for requests,
 * AL_ERR_INVALID_ARGUMENT for results and facts).
 */
#ifndef AL_JSON_FIELD_CODEC_H
#define AL_JSON_FIELD_CODEC_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <airlock/contract.h>
#include <airlock/error.h>

typedef struct jf_ctx {
	al_error **err;
	al_error_code code;
} jf_ctx;

/* Sets the error: reason = path, message = "<path> <text>". */
void jf_report(const jf_ctx *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* jf_report, then -EINVAL: a macro so the result is visibly negative to
 * readers and static analysers alike. */
#define jf_fail(c, path, ...) (jf_report((c), (path), __VA_ARGS__), -EINVAL)

/* Parses text (duplicate keys refused, NUL allowed inside strings so the
 * field checks can name the field) and requires an object no deeper than
 * AL_MAX_JSON_DEPTH.  Every failure has reason "body". */
int jf_load(const jf_ctx *c, const char *json, size_t len, size_t max_len,
	    json_t **out);

/* Fails with reason `path` when obj has a key outside `allowed`
 * (NULL-terminated).  The key itself is never echoed. */
int jf_only_keys(const jf_ctx *c, const json_t *obj, const char *path,
		 const char *const *allowed);

enum {
	JF_ALLOW_NUL = 1u << 0, /* the string is bytes, NUL allowed */
	JF_NONEMPTY = 1u << 1,
};

/* A JSON string of at most max bytes; *s is NUL-terminated (jansson's). */
int jf_string(const jf_ctx *c, const json_t *v, const char *path, size_t max,
	      unsigned flags, const char **s, size_t *len);
/* A JSON integer in [min, max]. */
int jf_uint(const jf_ctx *c, const json_t *v, const char *path, uint64_t min,
	    uint64_t max, uint64_t *out);
int jf_int(const jf_ctx *c, const json_t *v, const char *path, int64_t min,
	   int64_t max, int64_t *out);
int jf_bool(const jf_ctx *c, const json_t *v, const char *path, bool *out);

/* Reads a byte field given either as text (`key`) or as base64
 * (`key_b64`), never both; a null value counts as absent.  *present says
 * whether either was given; out is set (empty when absent).  path_text and
 * path_b64 name the two fields in errors. */
int jf_bytes(const jf_ctx *c, const json_t *obj, const char *key,
	     const char *key_b64, const char *path_text, const char *path_b64,
	     size_t max, al_bytes *out, bool *present);

/* true when bytes can travel as JSON text: valid UTF-8 and no NUL (many
 * JSON consumers mishandle \u0000). */
bool jf_bytes_are_text(const al_bytes *b);
/* Sets obj[key] to the text of b, or obj[key_b64] to its base64 when b is
 * not text.  0 or -ENOMEM. */
int jf_set_bytes(json_t *obj, const char *key, const char *key_b64,
		 const al_bytes *b);

/* Sets obj[key] = value, taking the reference; a NULL value means an
 * earlier allocation failed.  0 or -ENOMEM. */
int jf_set(json_t *obj, const char *key, json_t *value);
/* json_string of s, or JSON null when s is NULL. */
json_t *jf_string_or_null(const char *s);
/* A JSON array of the n strings of v; NULL on allocation failure. */
json_t *jf_strings(char *const *v, size_t n);

/* Dumps with `flags`; NULL on failure. */
char *jf_dump(const json_t *root, size_t flags);

#endif
