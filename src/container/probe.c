/* The container provider's probe: the configured runtime's version, and
 * one real container run as programs are run, whose view of itself says
 * which isolation axes bind.  A runtime that is absent, or that cannot
 * run a container here, makes the provider unavailable with that reason
 * — never another runtime in its place. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <airlock/provider.h>

#include "container/container.h"
#include "core/util.h"
#include "lang/languages.h"
#include "child/rundir.h"
#include "providers/builtin.h"
#include "sandbox/mounts.h"
#include "sandbox/runbase.h"
#include "sandbox/userns.h"

static const char probe_script[] =
	"echo pid=$(sh -c 'echo $$'); "
	"sed -n 's/^CapEff:[[:space:]]*/capeff=/p; "
	"s/^Seccomp:[[:space:]]*/seccomp=/p; "
	"s/^NoNewPrivs:[[:space:]]*/nnp=/p' /proc/self/status; "
	"echo uidmap=$(cat /proc/self/uid_map); "
	"echo ifaces=$(tail -n +3 /proc/net/dev | grep -vc '^ *lo:'); "
	"if (: > /.airlock-probe) 2>/dev/null; then echo rootrw=1; "
	"else echo rootrw=0; fi; "
	"if [ -e /root ] || [ -e /home ] || [ -e /var ]; then echo hostfs=1; "
	"else echo hostfs=0; fi; "
	"echo kernel=$(uname -r); echo uid=$(id -u)";

typedef struct observed {
	int pid, nnp, seccomp, ifaces, rootrw, hostfs, uid;
	char capeff[32];
	char uidmap[64];
	char kernel[64];
} observed;

static void parse(const al_bytes *out, observed *o)
{
	memset(o, 0, sizeof(*o));
	o->pid = o->nnp = o->seccomp = o->ifaces = -1;
	o->rootrw = o->hostfs = o->uid = -1;
	char *text = al_strdup_printf("%.*s", (int)out->len,
				      (const char *)out->data);
	for (char *save = NULL, *l = text ? strtok_r(text, "\n", &save) : NULL;
	     l; l = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(l, '=');
		if (eq == NULL)
			continue;
		*eq = '\0';
		const char *v = eq + 1;
		if (!strcmp(l, "pid")) o->pid = atoi(v);
		else if (!strcmp(l, "nnp")) o->nnp = atoi(v);
		else if (!strcmp(l, "seccomp")) o->seccomp = atoi(v);
		else if (!strcmp(l, "ifaces")) o->ifaces = atoi(v);
		else if (!strcmp(l, "rootrw")) o->rootrw = atoi(v);
		else if (!strcmp(l, "hostfs")) o->hostfs = atoi(v);
		else if (!strcmp(l, "uid")) o->uid = atoi(v);
		else if (!strcmp(l, "capeff"))
			snprintf(o->capeff, sizeof(o->capeff), "%s", v);
		else if (!strcmp(l, "uidmap"))
			snprintf(o->uidmap, sizeof(o->uidmap), "%s", v);
		else if (!strcmp(l, "kernel"))
			snprintf(o->kernel, sizeof(o->kernel), "%s", v);
	}
	free(text);
}

/* Runs the probe container; 0 with res filled, or a negative errno. */
static int run_probe(const al_ct_config *cfg, al_result *res, char **start_error)
{
	al_request *req = al_request_new();
	al_cancel *cancel = al_cancel_new();
	al_rundir rd = {0};
	al_sb_uid slot = {.fd = -1};
	int rc = -ENOMEM;
	if (req == NULL || cancel == NULL)
		goto out;
	req->limits.wall_ms = 10000;
	al_limits_apply_defaults(&req->limits);
	req->grant.network = AL_NETWORK_NONE;
	req->grant.workspace = AL_WORKSPACE_RW;
	if ((rc = al_sb_uid_take(cfg->uid_base, cfg->uid_count, &slot)) < 0)
		goto out;
	char run_id[40];
	static unsigned seq;
	snprintf(run_id, sizeof(run_id), "ctprobe-%d-%u", (int)getpid(),
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	if ((rc = al_rundir_create(cfg->run_dir ? cfg->run_dir
						: al_sb_run_base(req),
				   run_id, &rd, NULL)) < 0)
		goto out;
	if (chown(rd.workspace, slot.uid, slot.uid) < 0 ||
	    chown(rd.tmp, slot.uid, slot.uid) < 0) {
		rc = -errno;
		goto out;
	}
	char *argv[] = {"/bin/sh", "-c", (char *)probe_script, NULL};
	char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
			NULL};
	al_exec exec = {.run_id = run_id, .request = req, .cancel = cancel};
	al_ct_run r = {.cfg = cfg, .exec = &exec, .req = req, .rd = &rd,
		       .argv = argv, .envp = envp, .uid = slot.uid,
		       .name = run_id, .start_error = start_error};
	rc = al_ct_run_step(&r, res, NULL);
out:
	if (rd.root)
		al_rundir_remove(&rd);
	al_sb_uid_give(&slot);
	al_cancel_free(cancel);
	al_request_free(req);
	return rc;
}

static int add_languages(al_facts *f)
{
	int rc = 0;
	/* the toolchains' versions, cached by interpreter identity */
	char *cache = al_provider_cache_dir();
	for (const char *const *l = al_language_names(); rc == 0 && *l; l++) {
		al_toolchain *tc = NULL;
		/* no build step here (docs/languages.md): not offered */
		if (al_language_compiled(*l))
			continue;
		if (al_toolchain_observe(*l, NULL, cache, &tc, NULL) == 0 &&
		    al_sb_path_hidden(tc->path) == NULL)
			rc = al_facts_add_language(f, tc->language,
						   tc->toolchain, tc->version,
						   tc->path);
		al_toolchain_free(tc);
	}
	free(cache);
	return rc;
}

static char *first_line(char *s)
{
	if (s != NULL)
		s[strcspn(s, "\n")] = '\0';
	return s;
}

int al_ct_probe_facts(const al_ct_config *cfg, al_facts **out, al_error **err)
{
	al_facts *f = al_facts_new("container", AL_SAFETY_CONTAINER);
	al_result *res = al_result_new();
	char *binary = NULL, *version = NULL, *start_error = NULL;
	char *reason = NULL;
	observed o;
	memset(&o, 0, sizeof(o));
	bool own_kernel = false;
	int rc = 0;
	if (f == NULL || res == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if (cfg->variant == NULL) {
		reason = al_strdup_printf("container_unavailable: runtime \"%s\" "
					  "is not one of %s",
					  cfg->runtime_name,
					  al_ct_variant_names());
		goto decide;
	}
	if (cfg->variant->engine) {
		/* the Engine, asked over its socket */
		const al_ct_engine *eng = al_ct_engine_load();
		binary = strdup(cfg->docker_socket);
		if (eng == NULL) {
			reason = strdup("container_unavailable: the Docker "
					"Engine client (libairlock-remote.so) "
					"is not available");
			goto decide;
		}
		if (eng->version(cfg->docker_socket, &version) < 0) {
			reason = al_strdup_printf("container_unavailable: no "
						  "Docker Engine answers on %s",
						  cfg->docker_socket);
			goto decide;
		}
		goto run;
	}
	binary = al_ct_variant_locate(cfg->variant);
	if (binary == NULL) {
		reason = al_strdup_printf("container_unavailable: runtime %s is "
					  "not installed",
					  cfg->variant->name);
		goto decide;
	}
	if (geteuid() != 0) {
		reason = strdup("container_unavailable: the container provider "
				"runs containers as root only");
		goto decide;
	}
	char *vargv[] = {binary, "--version", NULL};
	if (al_ct_run_quiet(vargv, &version, 200) != 0) {
		reason = al_strdup_printf("container_unavailable: %s --version "
					  "failed",
					  cfg->variant->name);
		goto decide;
	}
	first_line(version);
run:
	if (geteuid() != 0) {
		reason = strdup("container_unavailable: the container provider "
				"runs containers as root only");
		goto decide;
	}
	rc = run_probe(cfg, res, &start_error);
	if (rc < 0) {
		reason = al_strdup_printf("container_unavailable: cannot "
					  "prepare the probe: %s",
					  strerror(-rc));
		rc = 0;
		goto decide;
	}
	if (res->outcome != AL_OUTCOME_COMPLETED && start_error == NULL &&
	    res->output[AL_STDERR].len > 0)
		start_error = al_strdup_printf(
			"%.*s",
			(int)(res->output[AL_STDERR].len > 300
				      ? 300
				      : res->output[AL_STDERR].len),
			(const char *)res->output[AL_STDERR].data);
	if (res->outcome != AL_OUTCOME_COMPLETED) {
		reason = al_strdup_printf(
			"container_unavailable: %s could not run a container "
			"here: %s",
			cfg->variant->name,
			start_error ? first_line(start_error)
				    : al_outcome_name(res->outcome));
		goto decide;
	}
	parse(&res->output[AL_STDOUT], &o);
	struct utsname u;
	if (uname(&u) < 0)
		u.release[0] = '\0';
	/* gVisor answers the program's syscalls in its own kernel: a
	 * release other than the host's says so */
	own_kernel = o.kernel[0] && strcmp(o.kernel, u.release) != 0;
	f->isolation = (al_isolation_axes){
		/* a new process's pid is counted from 1 (airlock-init):
		 * a pid namespace of its own */
		.process_contained = o.pid > 1 && o.pid <= 32,
		.host_filesystem_restricted = o.rootrw == 0 && o.hostfs == 0,
		.privilege_escalation_blocked =
			strspn(o.capeff, "0") == strlen(o.capeff) &&
			o.capeff[0] && o.uid > 0 && o.nnp == 1,
		.syscalls_restricted = o.seccomp == 2,
		.network_restricted = o.ifaces == 0,
	};
	/* Containment, the filesystem and the network must bind; the other
	 * two axes are reported as observed (gVisor's /proc/self/status,
	 * for one, has no NoNewPrivs line to observe). */
	const al_isolation_axes *a = &f->isolation;
	const char *missing = !a->process_contained ? "pid namespace"
			      : !a->host_filesystem_restricted ? "read-only root"
			      : !a->network_restricted ? "network namespace"
							: NULL;
	if (missing != NULL) {
		reason = al_strdup_printf("container_unavailable: %s not "
					  "observed inside the container",
					  missing);
		f->isolation = (al_isolation_axes){0};
		goto decide;
	}
	rc = add_languages(f);
	if (rc == 0 && f->n_languages == 0)
		reason = strdup("container_unavailable: no toolchain on the "
				"host");
decide:
	f->available = reason == NULL && rc == 0;
	f->unavailable_reason = reason;
	reason = NULL;
	if (f->available && cfg->variant != NULL) {
		f->limits = (AL_LIMIT_WALL_MS | AL_LIMIT_OUTPUT_BYTES |
			     AL_LIMIT_CPU_MS | AL_LIMIT_FILE_BYTES |
			     AL_LIMIT_OPEN_FILES | AL_LIMIT_MEMORY_BYTES |
			     AL_LIMIT_PIDS) &
			    ~cfg->variant->unenforced;
		f->network = (1u << AL_NETWORK_NONE) |
			     (1u << AL_NETWORK_LOOPBACK);
		f->workspace = (1u << AL_WORKSPACE_NONE) |
			       (1u << AL_WORKSPACE_RO) |
			       (1u << AL_WORKSPACE_RW);
		/* the Engine's logs are read when the container is over */
		f->streaming = !cfg->variant->engine;
	} else {
		memset(&f->isolation, 0, sizeof(f->isolation));
	}
	json_t *m = json_pack(
		"{s:s, s:s?, s:s?, s:s, s:s, s:s, s:b, s:b, s:s}", "runtime",
		cfg->runtime_name ? cfg->runtime_name : "", "runtime_path",
		binary, "runtime_version", version, "image", "host-usr",
		"user", "per_run_uid", "uid_map",
		o.uidmap[0] ? o.uidmap : "not observed", "user_namespace",
		o.uidmap[0] && strncmp(o.uidmap, "0 0 4294967295", 14) != 0,
		"read_only_root", o.rootrw == 0, "kernel_inside",
		o.kernel[0] ? o.kernel : "not observed");
	if (m != NULL && o.seccomp >= 0)
		json_object_set_new(m, "seccomp_mode", json_integer(o.seccomp));
	if (m != NULL && cfg->variant != NULL)
		json_object_set_new(m, "seccomp_profile",
				    json_string("airlock (OCI)"));
	if (m != NULL)
		json_object_set_new(m, "own_kernel", json_boolean(own_kernel));
	/* the store's images, with their digests */
	json_t *imgs = NULL;
	if (m != NULL && cfg->images_dir != NULL &&
	    al_ct_image_list(cfg->images_dir, &imgs) == 0)
		json_object_set_new(m, "images", imgs);
	f->mechanism_json = m ? json_dumps(m, JSON_COMPACT) : NULL;
	json_decref(m);
	if (f->mechanism_json == NULL)
		rc = -ENOMEM;
out:
	free(binary);
	free(version);
	free(start_error);
	free(reason);
	al_result_free(res);
	if (rc < 0) {
		al_facts_free(f);
		return al_error_set(err, AL_ERR_INTERNAL, -rc, NULL,
				    "probing the container provider failed");
	}
	*out = f;
	return 0;
}
