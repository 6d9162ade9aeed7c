/* The `sandbox` provider's operations: probe (observed facts), ensure
 * (one handle: config, compiled filter, cgroup discovery, facts), execute
 * (refusals first, then build and run steps in fresh sandboxes), interrupt
 * and release.  See docs/sandbox.md. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <airlock/provider.h>

#include "bundle/bundle.h"
#include "core/run_registry.h"
#include "core/util.h"
#include "lang/languages.h"
#include "child/artifacts.h"
#include "child/env.h"
#include "child/exec_shape.h"
#include "child/outputs.h"
#include "child/rundir.h"
#include "child/run_report.h"
#include "core/build_contract.h"
#include "sandbox/build.h"
#include "cgroup/cgroup.h"
#include "sandbox/context.h"
#include "sandbox/mounts.h"
#include "sandbox/pool.h"
#include "sandbox/probe.h"
#include "sandbox/run.h"
#include "sandbox/runbase.h"
#include "sandbox/sandbox.h"
#include "sandbox/userns.h"
#include "tool/proto.h"

struct al_provider_handle {
	al_sb_context ctx;
	al_facts *facts;
	al_run_registry runs;
	atomic_uint seq;
	/* A run found a mechanism missing: the handle reports unhealthy
	 * (the host retires it and probes again) and the cache is gone. */
	atomic_bool broken;
	al_sb_pool *pool; /* NULL: no warm pool configured */
};

static atomic_bool pools_off;

void al_sandbox_pools_off(void)
{
	atomic_store(&pools_off, true);
}

static int sb_probe(const char *config_json, al_facts **out, al_error **err)
{
	al_sb_context ctx;
	int rc = al_sb_context_init(&ctx, config_json, 0, err);
	if (rc < 0)
		return rc;
	rc = al_sb_probe_facts(&ctx, out, err);
	al_sb_context_clear(&ctx);
	return rc;
}

static int sb_ensure(const char *config_json, al_provider_handle **out,
		     al_error **err)
{
	al_provider_handle *h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	int rc = al_sb_context_init(&h->ctx, config_json, AL_SB_CTX_RUNS, err);
	if (rc < 0) {
		free(h);
		return rc;
	}
	rc = al_sb_probe_facts(&h->ctx, &h->facts, err);
	if (rc < 0) {
		al_sb_context_clear(&h->ctx);
		free(h);
		return rc;
	}
	al_run_registry_init(&h->runs);
	/* Members start being prepared now, in the background. */
	if (h->facts->available && !atomic_load(&pools_off)) {
		rc = al_sb_pool_start(&h->ctx, &h->pool, err);
		if (rc < 0) {
			al_run_registry_destroy(&h->runs);
			al_facts_free(h->facts);
			al_sb_context_clear(&h->ctx);
			free(h);
			return rc;
		}
	}
	*out = h;
	return 0;
}

static int sb_health(al_provider_handle *h, al_error **err)
{
	if (!h->facts->available || atomic_load(&h->broken))
		return al_error_set(err, AL_ERR_UNAVAILABLE, ENOSYS,
				    "sandbox_unavailable",
				    "the sandbox is not available on this host");
	return 0;
}

/* The run failed closed because something the facts promised did not
 * work: forget the cached observations, so the next probe tries them. */
static void mechanism_missing(al_provider_handle *h)
{
	atomic_store(&h->broken, true);
	al_sb_observations_invalidate(h->ctx.cache_dir);
}

/* Refusals decided before anything is created: 1 to go on. */
static int check_request(const al_facts *f, const al_request *req,
			 al_result *res)
{
	if (!f->available)
		return al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					     "sandbox_unavailable");
	if (req->exec != NULL ? !f->exec
			      : al_facts_find_language(f, req->language) == NULL)
		return al_result_set_outcome(
			res, AL_OUTCOME_UNSUPPORTED_LANGUAGE, NULL);
	unsigned extra = req->limits.set & ~f->limits;
	if (extra != 0) {
		unsigned bit = extra & (~extra + 1u);
		return al_result_set_outcome(res, AL_OUTCOME_UNENFORCEABLE_LIMIT,
					     al_limit_name(bit));
	}
	if (!(f->network & (1u << req->grant.network)))
		return al_result_set_outcome(res, AL_OUTCOME_UNENFORCEABLE_LIMIT,
					     "network");
	if (!(f->workspace & (1u << req->grant.workspace)))
		return al_result_set_outcome(res, AL_OUTCOME_UNENFORCEABLE_LIMIT,
					     "workspace");
	return 1;
}

static void clear_output(al_result *res)
{
	for (int s = 0; s < 2; s++) {
		al_bytes_clear(&res->output[s]);
		al_bytes_set(&res->output[s], "", 0);
		res->output_seen[s] = 0;
		res->truncated[s] = false;
	}
}

static int sb_execute(al_provider_handle *h, const al_exec *exec,
		      al_result *res, al_error **err)
{
	const al_request *req = exec->request;
	al_run_entry entry = {0};
	al_rundir rd = {0};
	al_toolchain *tc = NULL;
	al_plan plan = {0};
	char **envp = NULL;
	char *path_env = NULL;
	uid_t uid = 0;
	al_sb_uid slot = {.fd = -1};
	al_bundle_use bu = {0};
	al_runlog log = {.fd = -1};
	al_sb_member *member = NULL;
	int ws_fd = -1, store_fd = -1;
	int member_ws = -1; /* a member's tmpfs /workspace (grant rw) */
	int rc;

	snprintf(res->run_id, sizeof(res->run_id), "%s", exec->run_id);
	res->started_at_ms = al_now_ms();
	if (res->provider == NULL)
		res->provider = al_facts_dup(h->facts);
	al_run_registry_add(&h->runs, &entry, exec->run_id, exec->cancel);

	rc = check_request(h->facts, req, res);
	if (rc <= 0)
		goto out;
	if (al_build_flags_check(req->language, req->build_flags,
				 req->n_build_flags, NULL) < 0) {
		rc = al_result_set_outcome(res, AL_OUTCOME_INVALID_REQUEST,
					   "build_flags");
		goto out;
	}
	if (req->exec != NULL) {
		/* exec: the argv itself, its program beneath the read-only
		 * system directories every run sees at the same paths, or
		 * an interpreter of the facts with its toolchain's roots */
		size_t n_roots;
		const char *const *roots = al_sb_system_dirs(&n_roots);
		if (strchr(req->exec[0], '/') == NULL &&
		    al_facts_find_language(h->facts, req->exec[0]) != NULL &&
		    al_toolchain_observe(req->exec[0], NULL, h->ctx.cache_dir,
					 &tc, NULL) < 0)
			tc = NULL;
		rc = tc == NULL && strchr(req->exec[0], '/') == NULL
			     ? -EINVAL
			     : al_exec_shape_argv(h->facts, req, roots,
						  n_roots, &plan.run_argv);
		if (rc == -ENOMEM)
			goto out;
		if (rc < 0) {
			rc = al_result_set_outcome(
				res, AL_OUTCOME_INVALID_REQUEST, "exec[0]");
			goto out;
		}
	} else if (al_toolchain_observe(req->language, NULL, h->ctx.cache_dir,
					&tc, NULL) < 0) {
		rc = al_result_set_outcome(res, AL_OUTCOME_UNSUPPORTED_LANGUAGE,
					   NULL);
		goto out;
	}
	al_error *setup_err = NULL;
	if (al_bundle_use_init(&bu, exec, &setup_err) < 0) {
		/* a request that cannot be bundled, or a bundle that does not
		 * match its manifest */
		bool invalid = al_error_get_code(setup_err) ==
			       AL_ERR_INVALID_REQUEST;
		const char *why = al_error_get_reason(setup_err);
		rc = al_result_set_outcome(
			res,
			invalid ? AL_OUTCOME_INVALID_REQUEST : AL_OUTCOME_UNAVAILABLE,
			why[0] ? why : "bundle_mismatch");
		al_error_free(setup_err);
		goto out;
	}
	/* A warm member of this request's class, holding its limits now:
	 * its uid and run directory become the run's. */
	member = req->exec == NULL ? al_sb_pool_take(h->pool, exec, tc->path)
				   : NULL;
	if (member != NULL &&
	    al_sb_member_claim(&h->ctx, member, &req->limits) < 0) {
		al_sb_member_destroy(member);
		member = NULL;
		al_sb_pool_done(h->pool, req->language);
	}
	if (member != NULL) {
		slot = member->slot;
		member->slot = (al_sb_uid){.fd = -1};
		rd = member->rd;
		memset(&member->rd, 0, sizeof(member->rd));
		member_ws = member->ws_fd;
		member->ws_fd = -1;
		uid = h->ctx.privileged ? slot.uid : geteuid();
	} else if (h->ctx.privileged) {
		rc = al_sb_uid_take(h->ctx.cfg.uid_base, h->ctx.cfg.uid_count,
				    &slot);
		if (rc < 0) {
			/* every uid in use: busy; the pool itself unusable: the
			 * sandbox cannot keep runs apart */
			rc = al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
						   rc == -EAGAIN
							   ? "busy"
							   : "sandbox_unavailable");
			goto out;
		}
		uid = slot.uid;
	} else {
		uid = geteuid();
	}

	/* a tmpfs /workspace: nothing of it on the host (run.h) */
	bool bounded = al_sb_workspace_bytes(&h->ctx.cfg, req) > 0;
	rc = member != NULL
		     ? 0
		     : al_rundir_create(h->ctx.cfg.run_dir ? h->ctx.cfg.run_dir
							 : al_sb_run_base(req),
					exec->run_id, &rd, &setup_err);
	/* Fresh directories no program has seen yet: handed to the run's
	 * uid before anything is written into them (a member's were at its
	 * start; its program has not run yet). */
	if (rc == 0 && member == NULL && h->ctx.privileged &&
	    (chown(rd.workspace, uid, uid) < 0 || chown(rd.tmp, uid, uid) < 0))
		rc = al_error_set(&setup_err, AL_ERR_UNAVAILABLE, errno,
				  "workspace_setup_failed",
				  "cannot hand the workspace to the run's uid");
	/* The code always goes to RUN/code (bound read-only at /code); the
	 * inputs to RUN/workspace unless the workspace is a tmpfs: a cold
	 * init writes them into its own, a member's is written here beneath
	 * its descriptor. */
	uid_t own = h->ctx.privileged ? uid : (uid_t)-1;
	gid_t gown = h->ctx.privileged ? (gid_t)uid : (gid_t)-1;
	if (rc == 0)
		rc = al_rundir_materialise(&rd, bu.bundle, bu.manifest, !bounded,
					   own, gown, &setup_err);
	if (rc == 0 && member != NULL && bounded && member_ws < 0)
		rc = al_error_set(&setup_err, AL_ERR_UNAVAILABLE, EBADF,
				  "workspace_setup_failed",
				  "the warm member has no workspace");
	if (rc == 0 && member_ws >= 0) {
		rc = al_bundle_materialise(bu.bundle, bu.manifest, -1,
					   member_ws, own, gown, &setup_err);
		if (rc == 0) {
			ws_fd = member_ws;
			member_ws = -1;
		}
	}
	if (rc == 0 && !bounded && (ws_fd = al_rundir_workspace_fd(&rd)) < 0)
		rc = al_error_set(&setup_err, AL_ERR_UNAVAILABLE, -ws_fd,
				  "workspace_setup_failed",
				  "cannot open the workspace");
	char script[PATH_MAX];
	snprintf(script, sizeof(script), "/code/%s",
		 al_bundle_item_at(bu.bundle, 0)->path);
	al_limits blim;
	al_request_build_limits(req, &blim);
	al_plan_opts popts = {
		/* java's heap follows the memory the run really gets */
		.run_memory_bytes = req->limits.memory_bytes
					    ? req->limits.memory_bytes
					    : AL_SB_DEFAULT_MEMORY_BYTES,
		.build_memory_bytes = blim.memory_bytes,
		.flags = req->build_flags,
		.n_flags = req->n_build_flags,
	};
	if (rc == 0 && req->exec == NULL)
		rc = al_toolchain_plan_with(tc, script, "/build", req->argv,
					    req->argc, &popts, &plan,
					    &setup_err);
	if (rc < 0) {
		const char *why = al_error_get_reason(setup_err);
		rc = al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					   why[0] ? why : "workspace_setup_failed");
		al_error_free(setup_err);
		goto out;
	}

	path_env = tc != NULL ? al_env_path_for(tc->path)
			      : strdup(AL_EXEC_SHAPE_PATH);
	bool inbox = exec->inbox_dir != NULL && exec->inbox_acks_dir != NULL;
	al_env_base base = {.path = path_env, .home = "/workspace",
			    .tmpdir = "/tmp",
			    .inbox = inbox ? "/inbox" : NULL,
			    .inbox_acks = inbox ? "/inbox-acks" : NULL,
			    .tool_dir = exec->tool_dir ? AL_TOOL_SANDBOX_DIR : NULL,
			    .tool_bin_dir = exec->tool_dir ? AL_TOOL_SANDBOX_BIN
							   : NULL};
	if (path_env == NULL || al_env_build(&base, exec, &envp) < 0) {
		rc = -ENOMEM;
		goto out;
	}

	char cg_name[64];
	al_output_fn stream = req->grant.streaming ? exec->on_output : NULL;
	al_sb_step step = {
		.ctx = &h->ctx,
		.uid = uid,
		.rd = &rd,
		.extra_roots = tc != NULL ? tc->extra_roots : NULL,
		.envp = envp,
		.exec = exec,
		.has_build_dir = plan.build_argv != NULL,
		.cg_name = cg_name,
		.bundle = bu.bundle,
		.manifest = bu.manifest,
		.on_output = stream,
		.on_output_ctx = exec->on_output_ctx,
	};
	if (plan.build_argv != NULL) {
		snprintf(cg_name, sizeof(cg_name), "airlock-%d-%u-b",
			 (int)getpid(), atomic_fetch_add(&h->seq, 1));
		rc = al_sb_build(&step, &plan, envp, tc,
				 bu.manifest ? bu.manifest->digest : NULL, res,
				 err);
		if (rc != 0) {
			if (rc > 0)
				rc = 0;
			goto out;
		}
		clear_output(res);
	}
	snprintf(cg_name, sizeof(cg_name), "airlock-%d-%u", (int)getpid(),
		 atomic_fetch_add(&h->seq, 1));
	step.argv = plan.run_argv;
	step.build = false;
	step.with_stdin = true;
	/* The run's combined output is kept as the "log" artifact. */
	store_fd = al_artifacts_open_dir(exec->artifact_dir);
	al_runlog_open(&log, store_fd, req->limits.output_bytes, stream,
		       exec->on_output_ctx);
	step.on_output = al_runlog_output;
	step.on_output_ctx = &log;
	if (bounded)
		step.ws_fd = &ws_fd;
	rc = 1;
	if (member != NULL) {
		/* the member is gone after this, whatever happened */
		rc = al_sb_member_run(&h->ctx, member, &step, script, res, err);
		member = NULL;
		al_sb_pool_done(h->pool, req->language);
	}
	if (rc == 1 && step.ws_fd != NULL && ws_fd >= 0) {
		/* a dead member's tmpfs: the cold init fills its own */
		close(ws_fd);
		ws_fd = -1;
	}
	if (rc == 1) /* no member, or one found dead before go: cold */
		rc = al_sb_run_step(&step, res, err);
	al_runlog_close(&log);
	/* Everything of the run is gone (its pid namespace with it); the
	 * workspace — RUN/workspace, or the tmpfs held by ws_fd — is read
	 * from here, beneath its descriptor and never through a link. */
	if (rc == 0 && req->n_outputs > 0 && ws_fd >= 0 &&
	    al_outcome_ran(res->outcome)) {
		al_outputs_spec os = {
			.ws_dirfd = ws_fd,
			.store_dirfd = store_fd,
			.patterns = req->outputs,
			.n_patterns = req->n_outputs,
		};
		rc = al_outputs_collect(&os, res);
	}
	if (rc == 0) {
		uint64_t wsb = al_sb_workspace_bytes(&h->ctx.cfg, req);
		al_run_report rep = {.where = wsb > 0 ? "tmpfs at /workspace"
						      : "directory at /workspace",
				     .ws_bytes = wsb,
				     .store_dirfd = store_fd};
		rc = al_run_report_fill(res, req, &rep);
	}
out:
	if (member != NULL) {
		al_sb_member_destroy(member);
		al_sb_pool_done(h->pool, req->language);
	}
	if (h->facts->available && res->outcome == AL_OUTCOME_UNAVAILABLE &&
	    res->reason != NULL &&
	    strcmp(res->reason, "sandbox_unavailable") == 0)
		mechanism_missing(h);
	al_run_registry_remove(&h->runs, &entry);
	if (rd.root != NULL && al_rundir_remove(&rd) < 0 && rc == 0)
		rc = al_error_set(err, AL_ERR_IO, EIO, NULL,
				  "cannot remove the run directory");
	al_sb_uid_give(&slot);
	res->finished_at_ms = al_now_ms();
	if (ws_fd >= 0)
		close(ws_fd);
	if (member_ws >= 0)
		close(member_ws);
	if (store_fd >= 0)
		close(store_fd);
	al_bundle_use_clear(&bu);
	al_env_free(envp);
	free(path_env);
	al_plan_free(&plan);
	al_toolchain_free(tc);
	return rc;
}

void al_sb_provider_pool_stats(al_provider_handle *h, al_sb_pool_stats *out)
{
	al_sb_pool_get_stats(h != NULL ? h->pool : NULL, out);
}

/* AIRLOCK_SANDBOX_POOL_STATS=<file>: one JSON line per released handle
 * with a pool (docs/sandbox.md, "Warm pools": how the tests see that
 * runs really went through the pool). */
static void log_pool_stats(al_sb_pool *p)
{
	const char *path = getenv("AIRLOCK_SANDBOX_POOL_STATS");
	if (p == NULL || path == NULL || path[0] != '/')
		return;
	al_sb_pool_stats st;
	al_sb_pool_get_stats(p, &st);
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		      0600);
	if (fd < 0)
		return;
	char line[256];
	int n = snprintf(line, sizeof(line),
			 "{\"prepared\": %llu, \"failed\": %llu, \"taken\": %llu, "
			 "\"cold\": %llu, \"idle\": %llu}\n",
			 (unsigned long long)st.prepared,
			 (unsigned long long)st.failed,
			 (unsigned long long)st.taken,
			 (unsigned long long)st.cold,
			 (unsigned long long)st.idle);
	/* a debugging aid: a failed write has no one to tell */
	ssize_t w = n > 0 ? write(fd, line, (size_t)n) : 0;
	(void)w;
	close(fd);
}

static int sb_interrupt(al_provider_handle *h, const char *run_id,
			al_error **err)
{
	if (al_run_registry_interrupt(&h->runs, run_id) < 0)
		return al_error_set(err, AL_ERR_NOT_FOUND, ESRCH, NULL,
				    "no such live run");
	return 0;
}

static int sb_release(al_provider_handle *h, al_error **err)
{
	if (h == NULL)
		return 0;
	if (al_run_registry_count(&h->runs) != 0)
		return al_error_set(err, AL_ERR_INTERNAL, EBUSY, NULL,
				    "runs are still live on this handle");
	log_pool_stats(h->pool);
	int rc = al_sb_pool_stop(h->pool);
	h->pool = NULL;
	al_run_registry_destroy(&h->runs);
	al_facts_free(h->facts);
	al_sb_context_clear(&h->ctx);
	free(h);
	if (rc < 0)
		return al_error_set(err, AL_ERR_INTERNAL, -rc, NULL,
				    "a warm member could not be removed");
	return 0;
}

const al_provider_ops al_sandbox_provider = {
	AL_ABI_HEADER(al_provider_ops),
	.id = "sandbox",
	.probe = sb_probe,
	.ensure = sb_ensure,
	.health = sb_health,
	.execute = sb_execute,
	.interrupt = sb_interrupt,
	.release = sb_release,
};
