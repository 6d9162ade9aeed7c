/* The CLI loads the network parts — the runner service (libmicrohttpd) and
 * the remote provider (libcurl) — only when a command needs them, from
 * libairlock-net.so beside the airlock binary (or $AIRLOCK_NET_MODULE).
 * Linking them in would make every `airlock run` load some thirty more
 * shared libraries before doing anything.  The module's own references to
 * the library resolve against this executable (it is linked -rdynamic).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <airlock/provider.h>
#include <airlock/server.h>

#include "core/util.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void *module;
static char load_error[512];

static void load_module(void)
{
	char path[PATH_MAX];
	const char *env = getenv("AIRLOCK_NET_MODULE");
	if (env != NULL && env[0] == '/') {
		snprintf(path, sizeof(path), "%s", env);
	} else {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
		if (n <= 0) {
			snprintf(load_error, sizeof(load_error),
				 "cannot find the airlock binary's directory");
			return;
		}
		path[n] = '\0';
		char *slash = strrchr(path, '/');
		snprintf(slash != NULL ? slash + 1 : path,
			 sizeof(path) - (size_t)(slash != NULL ? slash + 1 - path : 0),
			 "libairlock-net.so");
	}
	module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (module == NULL)
		snprintf(load_error, sizeof(load_error), "%s", dlerror());
}

/* The module's definition of `name` (not this executable's stand-in). */
static void *net_symbol(const char *name)
{
	pthread_once(&once, load_module);
	return module != NULL ? dlsym(module, name) : NULL;
}

static const al_provider_ops *real_remote(al_error **err)
{
	const al_provider_ops *ops = net_symbol("al_remote_provider_module");
	if (ops == NULL)
		al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "module_missing",
			     "the network module is not available: %s",
			     load_error[0] ? load_error : "symbol missing");
	return ops;
}

static int lazy_probe(const char *config_json, al_facts **out, al_error **err)
{
	const al_provider_ops *ops = real_remote(NULL);
	if (ops != NULL)
		return ops->probe(config_json, out, err);
	/* Not being able to load it is a fact, not a probe failure. */
	al_facts *f = al_facts_new("remote", AL_SAFETY_REMOTE);
	if (f == NULL)
		return -ENOMEM;
	f->available = false;
	f->unavailable_reason = al_strdup_printf(
		"the network module (libairlock-net.so) cannot be loaded");
	if (f->unavailable_reason == NULL) {
		al_facts_free(f);
		return -ENOMEM;
	}
	*out = f;
	return 0;
}

static int lazy_ensure(const char *config_json, al_provider_handle **out,
		       al_error **err)
{
	const al_provider_ops *ops = real_remote(err);
	return ops != NULL ? ops->ensure(config_json, out, err) : -ENOENT;
}

/* A handle exists only when the module loaded, so these just forward. */
static int lazy_health(al_provider_handle *h, al_error **err)
{
	return real_remote(err)->health(h, err);
}

static int lazy_execute(al_provider_handle *h, const al_exec *exec,
			al_result *res, al_error **err)
{
	return real_remote(err)->execute(h, exec, res, err);
}

static int lazy_interrupt(al_provider_handle *h, const char *run_id,
			  al_error **err)
{
	return real_remote(err)->interrupt(h, run_id, err);
}

static int lazy_release(al_provider_handle *h, al_error **err)
{
	return real_remote(err)->release(h, err);
}

const al_provider_ops al_remote_provider = {
	.id = "remote",
	.probe = lazy_probe,
	.ensure = lazy_ensure,
	.health = lazy_health,
	.execute = lazy_execute,
	.interrupt = lazy_interrupt,
	.release = lazy_release,
};

int al_server_run(const al_server_options *opts, al_error **err)
{
	int (*run)(const al_server_options *, al_error **);
	*(void **)&run = net_symbol("al_server_run");
	if (run == NULL)
		return al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT,
				    "module_missing",
				    "the network module is not available: %s",
				    load_error[0] ? load_error : "symbol missing");
	return run(opts, err);
}
