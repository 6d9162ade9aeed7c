/* The module's side of src/netmod/host_api.h: every function the table
 * names, defined here as a call through the table the binary handed over.
 * Compiled into the network modules only; their version script keeps
 * these names local, so nothing outside the module sees them. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "netmod/host_api.h"

static const al_net_host_api *al_net_host;

int al_net_module_bind(const al_net_host_api *api)
{
	if (api == NULL || api->version != AL_NET_HOST_API_VERSION ||
	    api->size != sizeof(*api))
		return -EPROTO;
	al_net_host = api;
	return 0;
}

#define AL_NET_SHIM_FN(ret, name, params, args)                               \
	ret name params                                                       \
	{                                                                     \
		return al_net_host->name args;                                       \
	}
#define AL_NET_SHIM_PROC(ret, name, params, args)                             \
	ret name params                                                       \
	{                                                                     \
		al_net_host->name args;                                              \
	}
/* written out below */
#define AL_NET_SHIM_VA(ret, name, params, args)

AL_NET_HOST_API(AL_NET_SHIM_FN, AL_NET_SHIM_PROC, AL_NET_SHIM_VA)

/* The message is formatted here, at most as long as an al_error keeps. */
int al_error_set(al_error **errp, al_error_code code, int errnum,
		 const char *reason, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return al_net_host->al_error_set(errp, code, errnum, reason, "%s", msg);
}

int al_error_wrap(al_error **errp, int rc, const char *fmt, ...)
{
	if (fmt == NULL)
		return al_net_host->al_error_wrap(errp, rc, NULL);
	char ctx[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx, sizeof(ctx), fmt, ap);
	va_end(ap);
	return al_net_host->al_error_wrap(errp, rc, "%s", ctx);
}

void al_logf(al_log_level level, const char *run_id, const char *fmt, ...)
{
	if (!al_net_host->al_log_enabled(level))
		return;
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	al_net_host->al_logf(level, run_id, "%s", r >= 0 ? msg : fmt);
	if (r >= 0)
		free(msg);
}

/* Pure formatting: no state of the binary's is involved. */
char *al_strdup_printf(const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&s, fmt, ap);
	va_end(ap);
	return r >= 0 ? s : NULL;
}
