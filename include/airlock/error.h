/* airlock — typed errors.
 *
 * Functions return 0 or a negative errno.  When they fail for a reason a
 * caller may want to act on, they also fill an al_error out-parameter
 * (when the caller passed one).  The error holds a machine-readable code,
 * a short reason token (e.g. "limits.memory_bytes", "audit_refused") and a
 * human message.  Messages never contain request values or secrets.
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

#ifdef __cplusplus
}
#endif
#endif
