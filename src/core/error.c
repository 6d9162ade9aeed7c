/* Typed errors: a code, the errno, a reason token and a message. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/error.h>

struct al_error {
	al_error_code code;
	int errnum;
	char *reason;
	char message[512];
};

/* Returned when not even an error can be allocated: a failing call
 * still sets *err.  al_error_free leaves it alone. */
static al_error oom_error = {AL_ERR_INTERNAL, ENOMEM, NULL, "out of memory"};

int al_error_set(al_error **errp, al_error_code code, int errnum,
		 const char *reason, const char *fmt, ...)
{
	if (errnum <= 0)
		errnum = EINVAL;
	if (errp == NULL || *errp != NULL)
		return -errnum;

	al_error *e = calloc(1, sizeof(*e));
	if (e == NULL) {
		*errp = &oom_error;
		return -errnum;
	}
	e->code = code;
	e->errnum = errnum;
	if (reason != NULL)
		e->reason = strdup(reason);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	*errp = e;
	return -errnum;
}

al_error_code al_error_get_code(const al_error *err)
{
	return err != NULL ? err->code : (al_error_code)0;
}

int al_error_get_errno(const al_error *err)
{
	return err != NULL ? err->errnum : 0;
}

const char *al_error_get_reason(const al_error *err)
{
	return err != NULL && err->reason != NULL ? err->reason : "";
}

const char *al_error_get_message(const al_error *err)
{
	return err != NULL ? err->message : "";
}

/* msg (of size cap) becomes "ctx: msg", cut to fit. */
static void prefix(char *msg, size_t cap, const char *ctx)
{
	size_t cl = strlen(ctx) + 2, ml = strlen(msg);
	if (cl > cap - 1)
		cl = cap - 1;
	if (ml > cap - 1 - cl)
		ml = cap - 1 - cl;
	memmove(msg + cl, msg, ml);
	msg[cl + ml] = '\0';
	memcpy(msg, ctx, cl >= 2 ? cl - 2 : 0);
	if (cl >= 2) {
		msg[cl - 2] = ':';
		msg[cl - 1] = ' ';
	}
}

int al_error_wrap(al_error **errp, int rc, const char *fmt, ...)
{
	char ctx[256] = "";
	if (rc >= 0 || errp == NULL)
		return rc;
	if (fmt != NULL) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(ctx, sizeof(ctx), fmt, ap);
		va_end(ap);
	}
	if (*errp == NULL) {
		if (ctx[0] != '\0')
			return al_error_set(errp, AL_ERR_INTERNAL, -rc, NULL,
					    "%s: %s", ctx, strerror(-rc));
		return al_error_set(errp, AL_ERR_INTERNAL, -rc, NULL, "%s",
				    strerror(-rc));
	}
	if (ctx[0] != '\0' && *errp != &oom_error)
		prefix((*errp)->message, sizeof((*errp)->message), ctx);
	return rc;
}

void al_error_free(al_error *err)
{
	if (err == NULL || err == &oom_error)
		return;
	free(err->reason);
	free(err);
}
