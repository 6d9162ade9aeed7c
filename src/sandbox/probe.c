/* Observed facts of the sandbox provider: each mechanism is tried now in a
 * throwaway child, and each language is run (an empty program) inside a
 * real sandbox built for its toolchain.  The inside-run is cached in memory
 * and in the provider cache dir, keyed by the host toolchain's identity
 * (language, interpreter path, version), so a CLI run does not pay for it. */
#include "sandbox/probe.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <airlock/provider.h>

#include "core/util.h"
#include "lang/languages.h"
#include "proc/env.h"
#include "proc/rundir.h"
#include "sandbox/landlock.h"
#include "sandbox/run.h"
#include "sandbox/userns.h"

/* ---- mechanisms ------------------------------------------------------ */

enum {
	M_USERNS = 1 << 0,
	M_NS = 1 << 1,
	M_NNP = 1 << 2,
	M_CAPS = 1 << 3,
	M_LANDLOCK = 1 << 4,
	M_SECCOMP = 1 << 5,
};

static int trial(const al_sb_context *ctx)
{
	int bits = 0;
	int ns = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
		 CLONE_NEWUTS | CLONE_NEWCGROUP;
	if (ctx->privileged) {
		if (unshare(ns) == 0)
			bits |= M_NS;
		if (setresgid(65534, 65534, 65534) == 0 &&
		    setresuid(65534, 65534, 65534) == 0 &&
		    unshare(CLONE_NEWUSER) == 0)
			bits |= M_USERNS;
	} else if (unshare(CLONE_NEWUSER | ns) == 0) {
		bits |= M_USERNS | M_NS;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
		bits |= M_NNP;
	int ok = 1;
	for (int c = 0; c <= ctx->cap_last; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			ok = 0;
	if (ok && prctl(PR_CAPBSET_READ, 0, 0, 0, 0) == 0)
		bits |= M_CAPS;
	al_sb_landlock_spec ll = {.abi = ctx->landlock_abi};
	if (ctx->landlock_abi > 0 && al_sb_landlock_apply(&ll) == 0)
		bits |= M_LANDLOCK;
	if (al_sb_filter_load(&ctx->filter) == 0 &&
	    syscall(SYS_unshare, CLONE_NEWUTS) < 0 && errno == EPERM)
		bits |= M_SECCOMP;
	return bits;
}

void al_sb_probe_mechanisms(const al_sb_context *ctx, al_sb_mechanisms *m)
{
	memset(m, 0, sizeof(*m));
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		int bits = trial(ctx);
		ssize_t w = write(p[1], &bits, sizeof(bits));
		_exit(w == (ssize_t)sizeof(bits) ? 0 : 1);
	}
	close(p[1]);
	int bits = 0;
	if (pid > 0) {
		if (read(p[0], &bits, sizeof(bits)) != (ssize_t)sizeof(bits))
			bits = 0;
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	close(p[0]);
	m->user_namespaces = bits & M_USERNS;
	m->namespaces = bits & M_NS;
	m->no_new_privs = bits & M_NNP;
	m->caps_dropped = bits & M_CAPS;
	m->landlock = bits & M_LANDLOCK;
	m->seccomp = bits & M_SECCOMP;
}

/* ---- languages inside ------------------------------------------------ */

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *mem_cache; /* key -> true/false */

static char *cache_key(const al_toolchain *tc)
{
	return al_strdup_printf("v1|%s|%s|%s|%s", tc->language, tc->path,
				tc->version,
				tc->helper_path ? tc->helper_path : "");
}

static char *cache_file(const al_sb_context *ctx)
{
	if (ctx->cache_dir == NULL)
		return NULL;
	return al_strdup_printf("%s/sandbox-inside.json", ctx->cache_dir);
}

/* -1 unknown, 0 failed, 1 ran */
static int cache_get(const al_sb_context *ctx, const char *key)
{
	int r = -1;
	pthread_mutex_lock(&cache_lock);
	if (mem_cache == NULL) {
		char *file = cache_file(ctx);
		if (file)
			mem_cache = json_load_file(file, 0, NULL);
		free(file);
		if (mem_cache && !json_is_object(mem_cache)) {
			json_decref(mem_cache);
			mem_cache = NULL;
		}
		if (mem_cache == NULL)
			mem_cache = json_object();
	}
	json_t *v = mem_cache ? json_object_get(mem_cache, key) : NULL;
	if (json_is_boolean(v))
		r = json_is_true(v);
	pthread_mutex_unlock(&cache_lock);
	return r;
}

static void cache_put(const al_sb_context *ctx, const char *key, bool ok)
{
	pthread_mutex_lock(&cache_lock);
	if (mem_cache && json_object_set_new(mem_cache, key, json_boolean(ok)) == 0) {
		char *file = cache_file(ctx);
		char *tmp = file ? al_strdup_printf("%s.%d.tmp", file,
						    (int)getpid())
				 : NULL;
		if (tmp && json_dump_file(mem_cache, tmp, JSON_COMPACT) == 0 &&
		    rename(tmp, file) < 0)
			unlink(tmp);
		free(tmp);
		free(file);
	}
	pthread_mutex_unlock(&cache_lock);
}

/* Runs an empty program of tc's language in a sandbox; 1 when it
 * completed. */
static int run_inside(const al_sb_context *ctx, const al_toolchain *tc)
{
	al_request *req = al_request_new();
	al_cancel *cancel = al_cancel_new();
	al_result *res = al_result_new();
	al_rundir rd = {0};
	al_plan plan = {0};
	char **envp = NULL;
	uid_t uid = geteuid();
	bool have_uid = false;
	int ok = 0;
	if (!req || !cancel || !res)
		goto out;
	req->language = strdup(tc->language);
	if (req->language == NULL || al_bytes_set(&req->code, "", 0) < 0)
		goto out;
	req->limits.wall_ms = 10000;
	al_limits_apply_defaults(&req->limits);
	req->grant.network = AL_NETWORK_NONE;
	req->grant.workspace = AL_WORKSPACE_RW;
	if (ctx->privileged) {
		if (al_sb_uid_take(ctx->cfg.uid_base, ctx->cfg.uid_count,
				   &uid) < 0)
			goto out;
		have_uid = true;
	}
	char run_id[40];
	static unsigned seq;
	snprintf(run_id, sizeof(run_id), "probe-%d-%u", (int)getpid(),
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	if (al_rundir_create(ctx->cfg.run_dir, run_id, &rd, NULL) < 0 ||
	    al_rundir_write_code(&rd, al_language_script_name(tc->language),
				 &req->code, NULL) < 0)
		goto out;
	if (ctx->privileged &&
	    (chown(rd.workspace, uid, uid) < 0 || chown(rd.tmp, uid, uid) < 0))
		goto out;
	char script[256];
	snprintf(script, sizeof(script), "/code/%s",
		 al_language_script_name(tc->language));
	if (al_toolchain_plan(tc, script, "/build", NULL, 0, &plan, NULL) < 0)
		goto out;
	al_exec exec = {.run_id = run_id, .request = req, .cancel = cancel};
	al_env_base base = {.path = "/usr/local/bin:/usr/bin:/bin",
			    .home = "/workspace", .tmpdir = "/tmp"};
	if (al_env_build(&base, &exec, &envp) < 0)
		goto out;
	char cg_name[64];
	al_sb_step step = {.ctx = ctx, .uid = uid, .rd = &rd,
			   .extra_roots = tc->extra_roots, .envp = envp,
			   .exec = &exec, .cg_name = cg_name,
			   .has_build_dir = plan.build_argv != NULL};
	if (plan.build_argv) {
		snprintf(cg_name, sizeof(cg_name), "airlock-%s-b", run_id);
		step.argv = plan.build_argv;
		step.build = true;
		if (al_sb_run_step(&step, res, NULL) < 0 ||
		    res->outcome != AL_OUTCOME_COMPLETED)
			goto out;
		step.build = false;
	}
	snprintf(cg_name, sizeof(cg_name), "airlock-%s", run_id);
	step.argv = plan.run_argv;
	ok = al_sb_run_step(&step, res, NULL) == 0 &&
	     res->outcome == AL_OUTCOME_COMPLETED;
out:
	if (rd.root)
		al_rundir_remove(&rd);
	if (have_uid)
		al_sb_uid_give(uid);
	al_env_free(envp);
	al_plan_free(&plan);
	al_result_free(res);
	al_cancel_free(cancel);
	al_request_free(req);
	return ok;
}

static int add_languages(const al_sb_context *ctx, al_facts *f)
{
	for (const char *const *l = al_language_names(); *l != NULL; l++) {
		al_toolchain *tc = NULL;
		if (al_toolchain_observe(*l, NULL, ctx->cache_dir, &tc, NULL) < 0) {
			al_toolchain_free(tc);
			continue;
		}
		char *key = cache_key(tc);
		int ok = key ? cache_get(ctx, key) : -1;
		if (ok < 0) {
			ok = run_inside(ctx, tc);
			/* only success is cached: a failure is re-tried */
			if (key && ok == 1)
				cache_put(ctx, key, true);
		}
		int rc = 0;
		if (ok == 1)
			rc = al_facts_add_language(f, tc->language,
						   tc->toolchain, tc->version,
						   tc->path);
		free(key);
		al_toolchain_free(tc);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* ---- facts ------------------------------------------------------------ */

static char *mechanism_json(const al_sb_context *ctx, const al_sb_mechanisms *m)
{
	struct utsname u;
	if (uname(&u) < 0)
		snprintf(u.release, sizeof(u.release), "unknown");
	json_t *cg = json_pack(
		"{s:s, s:s, s:s, s:s}", "memory",
		al_sb_cgver_name(ctx->cg.ver[AL_CG_MEMORY]), "pids",
		al_sb_cgver_name(ctx->cg.ver[AL_CG_PIDS]), "cpu",
		al_sb_cgver_name(ctx->cg.ver[AL_CG_CPU]), "kill",
		ctx->cg.v2_kill ? "v2" : "pid_namespace");
	json_t *o = json_pack(
		"{s:s, s:o, s:b, s:i, s:b, s:s}", "kernel", u.release, "cgroup",
		cg, "seccomp", m->seccomp, "landlock_abi",
		m->landlock ? ctx->landlock_abi : 0, "user_namespaces",
		m->user_namespaces, "uid_mode",
		ctx->privileged ? "per_run_pool" : "own_uid");
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

int al_sb_probe_facts(const al_sb_context *ctx, al_facts **out,
		      al_error **err)
{
	al_facts *f = al_facts_new("sandbox", AL_SAFETY_SANDBOXED);
	if (f == NULL)
		return -ENOMEM;
	al_sb_mechanisms m;
	al_sb_probe_mechanisms(ctx, &m);
	const char *missing = !m.namespaces	   ? "namespaces"
			      : !m.user_namespaces ? "user_namespaces"
			      : !m.no_new_privs	   ? "no_new_privs"
			      : !m.caps_dropped	   ? "capabilities"
			      : !m.seccomp	   ? "seccomp"
						   : NULL;
	int rc = 0;
	if (missing == NULL)
		rc = add_languages(ctx, f);
	if (rc == 0 && missing == NULL && f->n_languages == 0)
		missing = "no toolchain runs inside the sandbox";
	f->available = missing == NULL;
	if (missing) {
		f->unavailable_reason =
			al_strdup_printf("sandbox_unavailable: %s", missing);
	} else {
		f->isolation = (al_isolation_axes){
			.process_contained = true,
			.host_filesystem_restricted = true,
			.privilege_escalation_blocked = true,
			.syscalls_restricted = true,
			.network_restricted = true,
		};
		f->limits = AL_LIMIT_WALL_MS | AL_LIMIT_OUTPUT_BYTES |
			    AL_LIMIT_CPU_MS | AL_LIMIT_FILE_BYTES |
			    AL_LIMIT_OPEN_FILES;
		if (ctx->cg.ver[AL_CG_MEMORY] != AL_CG_NONE)
			f->limits |= AL_LIMIT_MEMORY_BYTES;
		if (ctx->cg.ver[AL_CG_PIDS] != AL_CG_NONE)
			f->limits |= AL_LIMIT_PIDS;
		/* workspace_bytes is not offered: /tmp is a bounded tmpfs, but
		 * a rw /workspace is a bind of a host directory, unbounded */
		f->network = (1u << AL_NETWORK_NONE) |
			     (1u << AL_NETWORK_LOOPBACK);
		if (ctx->cfg.allow_host_network)
			f->network |= 1u << AL_NETWORK_HOST;
		f->workspace = (1u << AL_WORKSPACE_NONE) |
			       (1u << AL_WORKSPACE_RO) |
			       (1u << AL_WORKSPACE_RW);
		f->streaming = true;
	}
	f->mechanism_json = mechanism_json(ctx, &m);
	if (rc < 0 || f->mechanism_json == NULL ||
	    (missing && f->unavailable_reason == NULL)) {
		al_facts_free(f);
		return al_error_set(err, AL_ERR_INTERNAL, rc ? -rc : ENOMEM,
				    NULL, "probing the sandbox failed");
	}
	*out = f;
	return 0;
}
