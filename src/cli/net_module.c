/* The CLI loads the network parts only when a command needs them: the
 * runner service (libmicrohttpd) from libairlock-net.so, the remote
 * provider (libcurl, OpenSSL) from libairlock-remote.so, both beside the
 * airlock binary (the build tree), else in AL_MODULE_DIR (the installed
 * layout: `make install` compiles in $(LIBDIR)/airlock), or exactly
 * $AIRLOCK_NET_MODULE / $AIRLOCK_REMOTE_MODULE.
 * Linking them in would make every `airlock run` load some thirty more
 * shared libraries before doing anything, and a daemon without a remote
 * provider never maps libcurl.  A module calls this binary only through
 * the table src/netmod/host_api.h declares, handed over right after
 * dlopen; the binary exports nothing else to it.
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

#include "container/container.h"
#include "core/util.h"
#include "netmod/host_api.h"
#include "supervisor/toolbelt.h"

/* Everything a module may call in this binary. */
static const al_net_host_api host_api = {
	.version = AL_NET_HOST_API_VERSION,
	.size = sizeof(al_net_host_api),
#define AL_NET_HOST_API_FILL(ret, name, params, args) .name = (name),
	AL_NET_HOST_API(AL_NET_HOST_API_FILL, AL_NET_HOST_API_FILL,
			AL_NET_HOST_API_FILL)
#undef AL_NET_HOST_API_FILL
};

struct module {
	const char *file; /* beside the binary */
	const char *env;  /* absolute path override */
	pthread_once_t once;
	void *handle;
	char error[512];
};

static struct module server_module = {"libairlock-net.so",
				      "AIRLOCK_NET_MODULE",
				      PTHREAD_ONCE_INIT, NULL, ""};
static struct module remote_module = {"libairlock-remote.so",
				      "AIRLOCK_REMOTE_MODULE",
				      PTHREAD_ONCE_INIT, NULL, ""};

/* The installed modules' directory; empty in a plain build, where only
 * the binary's own directory is searched. */
#ifndef AL_MODULE_DIR
#define AL_MODULE_DIR ""
#endif

static void open_module(struct module *m, const char *path)
{
	m->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (m->handle == NULL) {
		snprintf(m->error, sizeof(m->error), "%s", dlerror());
		return;
	}
	/* Nothing of the module runs before it has the table. */
	int (*bind)(const al_net_host_api *);
	*(void **)&bind = dlsym(m->handle, AL_NET_MODULE_BIND);
	int rc = bind != NULL ? bind(&host_api) : -ENOENT;
	if (rc < 0) {
		snprintf(m->error, sizeof(m->error),
			 "%s: %s", path,
			 rc == -EPROTO ? "built for another airlock binary"
				       : "not an airlock network module");
		dlclose(m->handle);
		m->handle = NULL;
	}
}

static void load(struct module *m)
{
	char path[PATH_MAX];
	const char *env = getenv(m->env);
	if (env != NULL && env[0] == '/') {
		open_module(m, env);
		return;
	}
	/* Beside the binary first: a build tree's airlock uses its own
	 * modules even when an installed copy exists. */
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
	if (n > 0) {
		path[n] = '\0';
		char *slash = strrchr(path, '/');
		snprintf(slash != NULL ? slash + 1 : path,
			 sizeof(path) - (size_t)(slash != NULL ? slash + 1 - path : 0),
			 "%s", m->file);
		if (access(path, F_OK) == 0 || AL_MODULE_DIR[0] == '\0') {
			open_module(m, path);
			return;
		}
	} else if (AL_MODULE_DIR[0] == '\0') {
		snprintf(m->error, sizeof(m->error),
			 "cannot find the airlock binary's directory");
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", AL_MODULE_DIR, m->file);
	open_module(m, path);
}

static void load_server(void)
{
	load(&server_module);
}

static void load_remote(void)
{
	load(&remote_module);
}

/* A module's definition of `name` (not this executable's stand-in). */
static void *module_symbol(struct module *m, void (*loader)(void),
			   const char *name)
{
	pthread_once(&m->once, loader);
	return m->handle != NULL ? dlsym(m->handle, name) : NULL;
}

static const al_provider_ops *real_remote(al_error **err)
{
	const al_provider_ops *ops = module_symbol(
		&remote_module, load_remote, "al_remote_provider_module");
	if (ops == NULL)
		al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "module_missing",
			     "the remote provider's module is not available: %s",
			     remote_module.error[0] ? remote_module.error
						    : "symbol missing");
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
		"the remote provider's module (libairlock-remote.so) cannot be "
		"loaded");
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
	AL_ABI_HEADER(al_provider_ops),
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
	*(void **)&run =
		module_symbol(&server_module, load_server, "al_server_run");
	if (run == NULL)
		return al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT,
				    "module_missing",
				    "the network module is not available: %s",
				    server_module.error[0] ? server_module.error
							   : "symbol missing");
	return run(opts, err);
}

/* The toolbelt's webhook call lives in the remote module (libcurl). */
int al_tool_webhook_post(const char *url, const char *body,
			 uint64_t timeout_ms, uint64_t max, long *status,
			 char **out)
{
	int (*post)(const char *, const char *, uint64_t, uint64_t, long *,
		    char **);
	*(void **)&post = module_symbol(&remote_module, load_remote,
					"al_tool_webhook_post");
	*status = 0;
	*out = NULL;
	return post != NULL ? post(url, body, timeout_ms, max, status, out)
			    : -ENOSYS;
}

int cli_store_audit_verify(const char *url, uint64_t *records, al_error **err)
{
	int (*verify)(const char *, uint64_t *, al_error **);
	*(void **)&verify = module_symbol(&server_module, load_server,
					  "al_store_audit_verify");
	if (verify == NULL)
		return al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT,
				    "module_missing",
				    "the network module is not available: %s",
				    server_module.error[0] ? server_module.error
							   : "symbol missing");
	return verify(url, records, err);
}

/* The container provider's docker engine lives in the remote module
 * (libcurl); src/container/config.c calls this. */
const al_ct_engine *al_ct_docker_engine(void)
{
	const al_ct_engine *(*get)(void);
	*(void **)&get = module_symbol(&remote_module, load_remote,
				       "al_ct_docker_engine");
	return get != NULL ? get() : NULL;
}
