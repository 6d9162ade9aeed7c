/* The `local` provider: trusted, non-isolating execution on this host.
 *
 * What it enforces (and so advertises): its own session and process group
 * with no controlling terminal, the whole tree killed when the program
 * ends or the deadline passes (a subreaper shepherd), rlimits (core 0,
 * file size, open files, CPU time), output caps, a clean environment and a
 * private temporary directory.  No isolation axis: it must be explicitly
 * acknowledged as trusted before it runs anything.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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
#include "child/shepherd.h"
#include "core/probe_scope.h"
#include "providers/builtin.h"
#include "sandbox/mounts.h"

#define LOCAL_LIMITS                                                          \
	(AL_LIMIT_WALL_MS | AL_LIMIT_CPU_MS | AL_LIMIT_OUTPUT_BYTES |         \
	 AL_LIMIT_FILE_BYTES | AL_LIMIT_OPEN_FILES | AL_LIMIT_STACK_BYTES)

struct al_provider_handle {
	al_run_registry runs;
	char *cache_dir;
};

static int local_probe(const char *config_json, al_facts **out, al_error **err)
{
	(void)config_json;
	al_facts *f = al_facts_new("local", AL_SAFETY_TRUSTED_LOCAL);
	if (f == NULL)
		return -ENOMEM;
	f->available = true;
	f->limits = LOCAL_LIMITS;
	/* It cannot keep a program off the network or out of the host's
	 * files, so it offers only what it can honestly give. */
	f->network = 1u << AL_NETWORK_HOST;
	f->workspace = (1u << AL_WORKSPACE_NONE) | (1u << AL_WORKSPACE_RW);
	f->streaming = true;
	f->toolbelt = f->inject = f->interrupt = true;
	f->exec = true;
	int rc = 0;
	char *cache = al_provider_cache_dir();
	/* A probe that judges one request looks at its language alone: no
	 * handle here is built from these facts (core/probe_scope.h). */
	const char *scope = al_probe_scope_language();
	if (scope != NULL && !al_language_known(scope))
		scope = NULL;
	for (const char *const *l = al_language_names(); *l != NULL; l++) {
		al_toolchain *tc = NULL;
		if (al_language_compiled(*l))
			continue; /* refused: see local_execute */
		if (scope != NULL && strcmp(*l, scope) != 0)
			continue;
		int r = al_toolchain_observe(*l, NULL, cache, &tc, NULL);
		if (r == 0)
			rc = al_facts_add_language(f, tc->language, tc->toolchain,
						   tc->version, tc->path);
		al_toolchain_free(tc);
		if (rc < 0)
			break;
	}
	free(cache);
	if (rc == 0)
		f->mechanism_json = strdup("{\"process_tree\":\"subreaper\","
					   "\"rlimits\":true}");
	if (rc < 0 || f->mechanism_json == NULL) {
		al_facts_free(f);
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory while probing");
	}
	*out = f;
	return 0;
}

static int local_ensure(const char *config_json, al_provider_handle **out,
			al_error **err)
{
	(void)config_json;
	(void)err;
	al_provider_handle *h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	al_run_registry_init(&h->runs);
	h->cache_dir = al_provider_cache_dir();
	*out = h;
	return 0;
}

static int local_health(al_provider_handle *h, al_error **err)
{
	(void)h;
	(void)err;
	return 0;
}

/* Refusals decided before anything is created. */
static int check_enforceable(const al_request *req, al_result *res)
{
	unsigned extra = req->limits.set & ~(unsigned)LOCAL_LIMITS;
	if (extra != 0) {
		unsigned bit = extra & (~extra + 1u);
		return al_result_set_outcome(res, AL_OUTCOME_UNENFORCEABLE_LIMIT,
					     al_limit_name(bit));
	}
	if (req->grant.network != AL_NETWORK_HOST)
		return al_result_set_outcome(res, AL_OUTCOME_UNENFORCEABLE_LIMIT,
					     "network");
	if (req->grant.workspace == AL_WORKSPACE_RO)
		return al_result_set_outcome(res, AL_OUTCOME_UNENFORCEABLE_LIMIT,
					     "workspace");
	return 1;
}

/* Runs one argv to its end under the request's limits; its output goes
 * to on_output as it arrives. */
static int run_step(char *const *argv, char *const *envp, const char *cwd,
		    const al_exec *exec, bool with_stdin, al_output_fn on_output,
		    void *on_output_ctx, al_result *res, al_error **err)
{
	const al_request *req = exec->request;
	al_rlimit_spec rl[AL_CHILD_RLIMITS_MAX];
	al_spawn_spec spec = {
		.argv = argv,
		.envp = envp,
		.cwd = cwd,
		.rlimits = rl,
		.n_rlimits = al_child_rlimits(&req->limits, rl),
		.stdin_pipe = with_stdin && req->has_stdin &&
			      req->stdin_data.len > 0,
		.stdin_external = with_stdin && al_exec_stdin_fd(exec) >= 0,
		.stdin_src = al_exec_stdin_fd(exec),
	};
	if (spec.stdin_external)
		spec.stdin_pipe = false;
	al_child child;
	al_error *start_err = NULL;
	int rc = al_shepherd_spawn(&spec, &child, &start_err);
	if (rc < 0) {
		rc = al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					   "start_failed");
		al_error_free(start_err);
		return rc;
	}
	al_supervise_opts opts = {
		.stdin_data = spec.stdin_pipe ? &req->stdin_data : NULL,
		.output_cap = req->limits.output_bytes,
		.wall_ms = req->limits.wall_ms,
		.grace_ms = AL_DEFAULT_GRACE_MS,
		.cancel = exec->cancel,
		.on_output = on_output,
		.on_output_ctx = on_output_ctx,
	};
	al_supervise_result sr;
	rc = al_supervise(&child, &opts, &sr, err);
	free(child.signal_ctx);
	if (rc == 0)
		rc = al_supervise_to_result(&sr, res);
	al_supervise_result_clear(&sr);
	return rc;
}

/* The facts an exec program name is looked up in: the one language it
 * names, observed now (none when it names no language here). */
static al_facts *exec_language_facts(al_provider_handle *h,
				     const char *program)
{
	al_facts *f = al_facts_new("local", AL_SAFETY_TRUSTED_LOCAL);
	al_toolchain *tc = NULL;
	if (f != NULL && al_language_known(program) &&
	    al_toolchain_observe(program, NULL, h->cache_dir, &tc, NULL) == 0 &&
	    al_facts_add_language(f, tc->language, tc->toolchain, tc->version,
				  tc->path) < 0) {
		al_facts_free(f);
		f = NULL;
	}
	al_toolchain_free(tc);
	return f;
}

static int local_execute(al_provider_handle *h, const al_exec *exec,
			 al_result *res, al_error **err)
{
	const al_request *req = exec->request;
	al_run_entry entry = {0};
	al_rundir rd = {0};
	al_toolchain *tc = NULL;
	al_plan plan = {0};
	al_bundle_use bu = {0};
	al_runlog log = {.fd = -1};
	char **envp = NULL;
	char *path_env = NULL;
	int ws_fd = -1, store_fd = -1;
	int rc = 0;

	snprintf(res->run_id, sizeof(res->run_id), "%s", exec->run_id);
	res->started_at_ms = al_now_ms();
	al_run_registry_add(&h->runs, &entry, exec->run_id, exec->cancel);

	/* A compiled language's build and run steps need the sandbox's
	 * build directory and limits: not offered here. */
	if (al_language_compiled(req->language)) {
		rc = al_result_set_outcome(res, AL_OUTCOME_UNSUPPORTED_LANGUAGE,
					   "build_needs_sandbox");
		goto out;
	}
	if (req->exec != NULL) {
		/* exec: the same programs as in the sandbox (its read-only
		 * system directories), so a request means the same on both */
		size_t n_roots;
		const char *const *roots = al_sb_system_dirs(&n_roots);
		al_facts *lf = exec_language_facts(h, req->exec[0]);
		rc = lf == NULL ? -ENOMEM
				: al_exec_shape_argv(lf, req, roots, n_roots,
						     &plan.run_argv);
		al_facts_free(lf);
		if (rc == -ENOMEM)
			goto out;
		if (rc < 0) {
			rc = al_result_set_outcome(
				res, AL_OUTCOME_INVALID_REQUEST, "exec[0]");
			goto out;
		}
	} else if (!al_language_known(req->language) ||
		   al_toolchain_observe(req->language, NULL, h->cache_dir, &tc,
					NULL) < 0) {
		rc = al_result_set_outcome(res, AL_OUTCOME_UNSUPPORTED_LANGUAGE,
					   NULL);
		goto out;
	}
	rc = check_enforceable(req, res);
	if (rc <= 0)
		goto out;

	al_error *setup_err = NULL;
	if (al_bundle_use_init(&bu, exec, &setup_err) < 0) {
		/* a request that cannot be bundled, or a bundle that does not
		 * match its manifest */
		bool invalid = al_error_get_code(setup_err) ==
			       AL_ERR_INVALID_REQUEST;
		rc = al_result_set_outcome(
			res,
			invalid ? AL_OUTCOME_INVALID_REQUEST : AL_OUTCOME_UNAVAILABLE,
			al_error_get_reason(setup_err)[0]
				? al_error_get_reason(setup_err)
				: "bundle_mismatch");
		al_error_free(setup_err);
		goto out;
	}
	rc = al_rundir_create(NULL, exec->run_id, &rd, &setup_err);
	if (rc == 0)
		rc = al_rundir_materialise(&rd, bu.bundle, bu.manifest, true,
					   (uid_t)-1, (gid_t)-1, &setup_err);
	if (rc == 0 && (ws_fd = al_rundir_workspace_fd(&rd)) < 0)
		rc = al_error_set(&setup_err, AL_ERR_UNAVAILABLE, -ws_fd,
				  "workspace_setup_failed",
				  "cannot open the workspace");
	if (rc == 0 && req->exec == NULL)
		rc = al_toolchain_plan(tc, rd.script_path, rd.tmp, req->argv,
				       req->argc, &plan, &setup_err);
	if (rc < 0) {
		const char *why = al_error_get_reason(setup_err);
		rc = al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					   why[0] ? why : "workspace_setup_failed");
		al_error_free(setup_err);
		goto out;
	}

	path_env = tc != NULL ? al_env_path_for(tc->path)
			      : strdup(AL_EXEC_SHAPE_PATH);
	/* No isolation here: the inbox is shown at its host paths. */
	al_env_base base = {.path = path_env, .home = rd.workspace,
			    .tmpdir = rd.tmp, .inbox = exec->inbox_dir,
			    .inbox_acks = exec->inbox_acks_dir,
			    .tool_dir = exec->tool_dir,
			    .tool_bin_dir = exec->tool_bin_dir};
	if (path_env == NULL || al_env_build(&base, exec, &envp) < 0) {
		rc = -ENOMEM;
		goto out;
	}

	al_output_fn stream = req->grant.streaming ? exec->on_output : NULL;
	if (plan.build_argv != NULL) {
		rc = run_step(plan.build_argv, envp, rd.workspace, exec, false,
			      stream, exec->on_output_ctx, res, err);
		if (rc < 0 || res->outcome != AL_OUTCOME_COMPLETED)
			goto out;
		/* The build's own output is not the program's. */
		for (int s = 0; s < 2; s++) {
			al_bytes_clear(&res->output[s]);
			al_bytes_set(&res->output[s], "", 0);
			res->output_seen[s] = 0;
			res->truncated[s] = false;
		}
	}
	/* The run's combined output is kept as the "log" artifact. */
	store_fd = al_artifacts_open_dir(exec->artifact_dir);
	al_runlog_open(&log, store_fd, req->limits.output_bytes, stream,
		       exec->on_output_ctx);
	rc = run_step(plan.run_argv, envp, rd.workspace, exec, true,
		      al_runlog_output, &log, res, err);
	al_runlog_close(&log);
	/* The tree is gone: collect what it left, never through a link. */
	if (rc == 0 && req->n_outputs > 0 && al_outcome_ran(res->outcome)) {
		al_outputs_spec os = {
			.ws_dirfd = ws_fd,
			.store_dirfd = store_fd,
			.patterns = req->outputs,
			.n_patterns = req->n_outputs,
		};
		rc = al_outputs_collect(&os, res);
	}
	if (rc == 0) {
		al_run_report rep = {.where = "directory on the host",
				     .store_dirfd = store_fd};
		rc = al_run_report_fill(res, req, &rep);
	}
out:
	al_run_registry_remove(&h->runs, &entry);
	if (rd.root != NULL && al_rundir_remove(&rd) < 0 && rc == 0)
		rc = al_error_set(err, AL_ERR_IO, EIO, NULL,
				  "cannot remove the run directory");
	res->finished_at_ms = al_now_ms();
	if (ws_fd >= 0)
		close(ws_fd);
	if (store_fd >= 0)
		close(store_fd);
	al_bundle_use_clear(&bu);
	al_env_free(envp);
	free(path_env);
	al_plan_free(&plan);
	al_toolchain_free(tc);
	return rc;
}

static int local_interrupt(al_provider_handle *h, const char *run_id,
			   al_error **err)
{
	return al_run_registry_interrupt_run(&h->runs, run_id, err);
}

static int local_release(al_provider_handle *h, al_error **err)
{
	if (h == NULL)
		return 0;
	int busy = al_run_registry_check_idle(&h->runs, err);
	if (busy < 0)
		return busy;
	al_run_registry_destroy(&h->runs);
	free(h->cache_dir);
	free(h);
	return 0;
}

const al_provider_ops al_local_provider = {
	AL_ABI_HEADER(al_provider_ops),
	.id = "local",
	.probe = local_probe,
	.ensure = local_ensure,
	.health = local_health,
	.execute = local_execute,
	.interrupt = local_interrupt,
	.release = local_release,
};
