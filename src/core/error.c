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

int al_error_set(al_error **errp, al_error_code code, int errnum,
		 const char *reason, const char *fmt, ...)
{
	if (errnum <= 0)
		errnum = EINVAL;
	if (errp == NULL || *errp != NULL)
		return -errnum;

	al_error *e = calloc(1, sizeof(*e));
	if (e == NULL)
		return -errnum;
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

void al_error_free(al_error *err)
{
	if (err == NULL)
		return;
	free(err->reason);
	free(err);
}
