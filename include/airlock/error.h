/* airlock — typed errors.
 *
 * The return convention of every public function that can fail:
 *
 *   int al_thing(..., al_error **err);
 *
 * returns 0 (or a count, where documented) on success and a negative
 * errno on failure, and on every failure sets *err (when err is non-NULL
 * and *err is NULL: the first error wins; the caller frees it with
 * al_error_free).  An allocation failure too: then *err may be a shared
 * "out of memory" error, which al_error_free accepts like any other.
 * Functions that cannot fail return void; constructors that cannot report
 * more than "no memory" may return NULL.
 *
 * The error holds a machine-readable code, the errno, a short reason
 * token (e.g. "limits.memory_bytes", "audit_refused") and a human message.
 * Messages never contain request values or secrets.
 */
#ifndef AIRLOCK_ERROR_H
#define AIRLOCK_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum al_error_code {
	AL_ERR_INTERNAL = 1,	 /* a bug or an unexpected system failure */
	AL_ERR_INVALID_REQUEST,	 /* malformed request; reason = field path */
	AL_ERR_INVALID_CONFIG,	 /* bad configuration; reason = key path */
	AL_ERR_INVALID_ARGUMENT, /* bad API or CLI argument */
	AL_ERR_NOT_FOUND,	 /* unknown provider, run, language ... */
	AL_ERR_UNAVAILABLE,	 /* a mechanism or resource is missing */
	AL_ERR_UNSUPPORTED,	 /* not offered by this provider */
	AL_ERR_IO,		 /* reading or writing failed */
} al_error_code;

typedef struct al_error al_error;

/* Accessors; all accept NULL and then return 0 / "". */
al_error_code al_error_get_code(const al_error *err);
int al_error_get_errno(const al_error *err);
const char *al_error_get_reason(const al_error *err);
const char *al_error_get_message(const al_error *err);
void al_error_free(al_error *err);

/* Sets *errp (when errp is non-NULL and *errp is NULL: the first error
 * wins) and returns -errnum (or -EINVAL when errnum is 0), so a caller can
 * write `return al_error_set(err, ...)`.  reason may be NULL. */
int al_error_set(al_error **errp, al_error_code code, int errnum,
		 const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Adds context to a failure on its way up and returns rc unchanged, so a
 * caller can write `return al_error_wrap(err, rc, "loading %s", what)`.
 * rc >= 0: nothing happens.  rc < 0 with *errp set: its message becomes
 * "CONTEXT: message" (code, errno and reason are kept).  rc < 0 with no
 * error yet (an inner function returned a bare errno, e.g. -ENOMEM): sets
 * one, AL_ERR_INTERNAL with errno -rc and "CONTEXT: strerror(-rc)".  fmt
 * may be NULL: then no prefix is added, only the guarantee that *errp is
 * set — what a public function does at its boundary. */
int al_error_wrap(al_error **errp, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif
#endif
