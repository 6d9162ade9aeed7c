/* Observed facts of the sandbox provider: the mechanisms and cgroups as
 * the context observed them (trials, or their cached verdicts for this
 * boot), and each language as run (an empty program) inside a real sandbox
 * built for its toolchain, cached per toolchain identity (observation_cache.h). */
#include "sandbox/probe.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <airlock/provider.h>

#include "core/util.h"
#include "lang/languages.h"
#include "lang/path_memo.h"
#include "child/env.h"
#include "child/rundir.h"
#include "sandbox/mounts.h"
#include "sandbox/run.h"
#include "sandbox/runbase.h"
#include "sandbox/userns.h"

/* ---- languages inside ------------------------------------------------ */

/* A toolchain's identity for the inside-run cache: what the sandbox
 * mounts and runs for it. */
static char *toolchain_id(const al_toolchain *tc)
{
	char *roots = strdup("");
	for (size_t i = 0; roots && tc->extra_roots && tc->extra_roots[i];
	     i++) {
		char *next = al_strdup_printf("%s:%s", roots, tc->extra_roots[i]);
		free(roots);
		roots = next;
	}
	char *id = roots ? al_strdup_printf("%s|%s|%s|%s|%s", tc->language,
					    tc->path, tc->version,
					    tc->helper_path ? tc->helper_path
							    : "",
					    roots)
			 : NULL;
	free(roots);
	return id;
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
	al_sb_uid slot = {.fd = -1};
	int ok = 0;
	if (!req || !cancel || !res)
		goto out;
	req->language = strdup(tc->language);
	if (req->language == NULL)
		goto out;
	/* a compiled language's trial builds a program that exits 0 */
	const char *trial = al_language_trial_code(tc->language);
	if (trial != NULL) {
		al_bytes_clear(&req->code); /* al_bytes_set does not free */
		if (al_bytes_set(&req->code, trial, strlen(trial)) < 0)
			goto out;
	}
	req->limits.wall_ms = 10000;
	al_limits_apply_defaults(&req->limits);
	req->grant.network = AL_NETWORK_NONE;
	req->grant.workspace = AL_WORKSPACE_RW;
	if (ctx->privileged) {
		if (al_sb_uid_take(ctx->cfg.uid_base, ctx->cfg.uid_count,
				   &slot) < 0)
			goto out;
		uid = slot.uid;
	}
	char run_id[40];
	static unsigned seq;
	snprintf(run_id, sizeof(run_id), "probe-%d-%u", (int)getpid(),
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	if (al_rundir_create(ctx->cfg.run_dir ? ctx->cfg.run_dir
					      : al_sb_run_base(req),
			     run_id, &rd, NULL) < 0 ||
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
		al_sb_cgrun_name(cg_name, sizeof(cg_name), "probe-b");
		step.argv = plan.build_argv;
		step.build = true;
		if (al_sb_run_step(&step, res, NULL) < 0 ||
		    res->outcome != AL_OUTCOME_COMPLETED)
			goto out;
		step.build = false;
	}
	al_sb_cgrun_name(cg_name, sizeof(cg_name), "probe");
	step.argv = plan.run_argv;
	ok = al_sb_run_step(&step, res, NULL) == 0 &&
	     res->outcome == AL_OUTCOME_COMPLETED;
out:
	if (rd.root)
		al_rundir_remove(&rd);
	al_sb_uid_give(&slot);
	al_env_free(envp);
	al_plan_free(&plan);
	al_result_free(res);
	al_cancel_free(cancel);
	al_request_free(req);
	return ok;
}

/* Why tc cannot run inside (a part of it lies where the sandbox mounts
 * its own /tmp, /dev, ...), or NULL. */
static char *hidden_reason(const al_toolchain *tc)
{
	const char *part = NULL, *dir = NULL;
	if ((dir = al_sb_path_hidden(tc->path)) != NULL)
		part = tc->path;
	else if (tc->helper_path &&
		 (dir = al_sb_path_hidden(tc->helper_path)) != NULL)
		part = tc->helper_path;
	for (size_t i = 0; !dir && tc->extra_roots && tc->extra_roots[i]; i++)
		if ((dir = al_sb_path_hidden(tc->extra_roots[i])) != NULL)
			part = tc->extra_roots[i];
	if (dir == NULL)
		return NULL;
	return al_strdup_printf("toolchain_hidden: %s is under %s, which the "
				"sandbox replaces with its own",
				part, dir);
}

/* absent: language -> why a toolchain found on the host is not offered.
 * only: that language's toolchain alone (NULL: every language's). */
static int add_languages(al_sb_context *ctx, const char *only, al_facts *f,
			 json_t *absent)
{
	int rc = 0;
	const char *const one[] = {only, NULL};
	/* one look at PATH's directories for the whole pass */
	al_path_memo_hold();
	for (const char *const *l = only != NULL ? one : al_language_names();
	     rc == 0 && *l != NULL; l++) {
		al_toolchain *tc = NULL;
		al_error *why = NULL;
		if (al_toolchain_observe(*l, NULL, ctx->cache_dir, &tc, &why) < 0) {
			/* not found, or not usable: say so, and why */
			json_object_set_new(absent, *l,
					    json_string(al_error_get_message(why)));
			al_error_free(why);
			al_toolchain_free(tc);
			continue;
		}
		char *hidden = hidden_reason(tc);
		if (hidden != NULL) {
			/* no trial: it cannot see its own files in there */
			json_object_set_new(absent, *l, json_string(hidden));
			free(hidden);
			al_toolchain_free(tc);
			continue;
		}
		char *id = toolchain_id(tc);
		int ok = id && ctx->lang_key[0]
				 ? al_sb_observations_inside_get(ctx->cache_dir,
							ctx->lang_key, id)
				 : -1;
		if (ok < 0) {
			ok = al_sb_context_need_filter(ctx, NULL) == 0 &&
			     run_inside(ctx, tc);
			/* only success is cached: a failure is tried again */
			if (id && ctx->lang_key[0] && ok == 1)
				al_sb_observations_inside_put(ctx->cache_dir,
						     ctx->lang_key, id);
		}
		if (ok == 1)
			rc = al_facts_add_language(f, tc->language,
						   tc->toolchain, tc->version,
						   tc->path);
		else
			json_object_set_new(
				absent, *l,
				json_string("inside_failed: an empty program "
					    "did not complete in the sandbox"));
		free(id);
		al_toolchain_free(tc);
	}
	al_path_memo_release();
	return rc;
}

int al_sb_probe_try_language(al_sb_context *ctx, const char *language)
{
	al_toolchain *tc = NULL;
	if (al_toolchain_observe(language, NULL, ctx->cache_dir, &tc, NULL) <
	    0) {
		al_toolchain_free(tc);
		return -ENOENT;
	}
	char *hidden = hidden_reason(tc);
	int rc = hidden != NULL ? -ENOENT
	       : al_sb_context_need_filter(ctx, NULL) < 0 ? 0
							   : run_inside(ctx, tc);
	free(hidden);
	al_toolchain_free(tc);
	return rc;
}

/* ---- facts ------------------------------------------------------------ */

unsigned al_sb_probe_limits(const al_sb_context *ctx)
{
	/* workspace_bytes: /workspace is then a tmpfs of that size (run.c),
	 * so writing past it is ENOSPC */
	unsigned l = AL_LIMIT_WALL_MS | AL_LIMIT_OUTPUT_BYTES |
		     AL_LIMIT_CPU_MS | AL_LIMIT_FILE_BYTES |
		     AL_LIMIT_OPEN_FILES | AL_LIMIT_WORKSPACE_BYTES |
		     AL_LIMIT_STACK_BYTES;
	if (ctx->cg.ver[AL_CG_MEMORY] != AL_CG_NONE)
		l |= AL_LIMIT_MEMORY_BYTES;
	if (ctx->cg.ver[AL_CG_PIDS] != AL_CG_NONE)
		l |= AL_LIMIT_PIDS;
	/* socket_bytes on its own only where a limit of its own can be
	 * written (v1); on v2 socket buffers count against memory_bytes and
	 * cannot be bounded apart from it */
	if (ctx->cg.v1_socket)
		l |= AL_LIMIT_SOCKET_BYTES;
	return l;
}

static char *mechanism_json(const al_sb_context *ctx, json_t *absent)
{
	struct utsname u;
	if (uname(&u) < 0)
		snprintf(u.release, sizeof(u.release), "unknown");
	/* where socket buffers are charged (docs/sandbox.md, "Socket
	 * memory") */
	const char *sock = ctx->cg.v1_socket ? "v1_kmem_tcp"
			   : ctx->cg.ver[AL_CG_MEMORY] == AL_CG_V2 ? "v2_memory"
								   : "none";
	json_t *cg = json_pack(
		"{s:s, s:s, s:s, s:s, s:s}", "memory",
		al_sb_cgver_name(ctx->cg.ver[AL_CG_MEMORY]), "pids",
		al_sb_cgver_name(ctx->cg.ver[AL_CG_PIDS]), "cpu",
		al_sb_cgver_name(ctx->cg.ver[AL_CG_CPU]), "kill",
		ctx->cg.v2_kill ? "v2" : "pid_namespace", "socket", sock);
	/* the bounds a run that names no limit still gets (cgroup.c); none
	 * where the controller has no cgroup */
	json_t *bounds = json_object();
	if (bounds && ctx->cg.ver[AL_CG_MEMORY] != AL_CG_NONE)
		json_object_set_new(bounds, "memory_bytes",
				    json_integer(AL_SB_DEFAULT_MEMORY_BYTES));
	if (bounds && ctx->cg.ver[AL_CG_PIDS] != AL_CG_NONE)
		json_object_set_new(bounds, "pids",
				    json_integer(AL_SB_DEFAULT_PIDS));
	/* a rw workspace is always a tmpfs of this size when the request
	 * names none; socket buffers are bounded where v1 lets us */
	if (bounds && ctx->cfg.workspace_bytes > 0)
		json_object_set_new(
			bounds, "workspace_bytes",
			json_integer((json_int_t)ctx->cfg.workspace_bytes));
	if (bounds && ctx->cg.v1_socket && ctx->cfg.socket_bytes > 0)
		json_object_set_new(
			bounds, "socket_bytes",
			json_integer((json_int_t)ctx->cfg.socket_bytes));
	json_t *o = json_pack(
		"{s:s, s:o, s:o, s:b, s:i, s:b, s:s, s:s}", "kernel", u.release,
		"default_bounds", bounds,
		"cgroup", cg, "seccomp", ctx->obs.mech.seccomp, "landlock_abi",
		ctx->obs.mech.landlock ? ctx->landlock_abi : 0,
		"user_namespaces", ctx->obs.mech.user_namespaces, "uid_mode",
		ctx->privileged ? "per_run_pool" : "own_uid", "observed",
		ctx->obs_cached ? "cached_this_boot" : "now");
	if (o != NULL && json_object_size(absent) > 0 &&
	    json_object_set(o, "languages_absent", absent) < 0) {
		json_decref(o);
		o = NULL;
	}
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return s;
}

int al_sb_probe_facts(al_sb_context *ctx, al_facts **out, al_error **err)
{
	return al_sb_probe_facts_of(ctx, NULL, out, err);
}

int al_sb_probe_facts_of(al_sb_context *ctx, const char *language,
			 al_facts **out, al_error **err)
{
	if (language != NULL && !al_language_known(language))
		return al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL,
				    "language", "unknown language");
	al_facts *f = al_facts_new("sandbox", AL_SAFETY_SANDBOXED);
	if (f == NULL)
		return -ENOMEM;
	const al_sb_mechanisms *m = &ctx->obs.mech;
	const char *missing = !m->namespaces	    ? "namespaces"
			      : !m->user_namespaces ? "user_namespaces"
			      : !m->no_new_privs    ? "no_new_privs"
			      : !m->caps_dropped    ? "capabilities"
			      : !m->seccomp	    ? "seccomp"
			      : ctx->privileged && al_sb_uid_pool_check() < 0
				      ? "uid_pool"
				      : NULL;
	int rc = 0;
	json_t *absent = json_object();
	if (absent == NULL) {
		al_facts_free(f);
		return -ENOMEM;
	}
	if (missing == NULL)
		rc = add_languages(ctx, language, f, absent);
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
		f->limits = al_sb_probe_limits(ctx);
		f->network = (1u << AL_NETWORK_NONE) |
			     (1u << AL_NETWORK_LOOPBACK);
		if (ctx->cfg.allow_host_network)
			f->network |= 1u << AL_NETWORK_HOST;
		f->workspace = (1u << AL_WORKSPACE_NONE) |
			       (1u << AL_WORKSPACE_RO) |
			       (1u << AL_WORKSPACE_RW);
		f->streaming = true;
		/* the toolbelt's binds, the inbox, interrupt (durable runs) */
		f->toolbelt = f->inject = f->interrupt = true;
		f->exec = true;
	}
	f->mechanism_json = mechanism_json(ctx, absent);
	json_decref(absent);
	if (rc < 0 || f->mechanism_json == NULL ||
	    (missing && f->unavailable_reason == NULL)) {
		al_facts_free(f);
		return al_error_set(err, AL_ERR_INTERNAL, rc ? -rc : ENOMEM,
				    NULL, "probing the sandbox failed");
	}
	*out = f;
	return 0;
}
