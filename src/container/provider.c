/* The `container` provider's operations (docs/containers.md): the same
 * request, grant, limits, workspace, declared outputs and inbox as the
 * sandbox, the program run in an OCI container by the configured
 * runtime variant. */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <airlock/provider.h>

#include "bundle/bundle.h"
#include "container/container.h"
#include "core/run_registry.h"
#include "core/util.h"
#include "lang/languages.h"
#include "child/artifacts.h"
#include "child/env.h"
#include "child/outputs.h"
#include "child/rundir.h"
#include "providers/builtin.h"
#include "sandbox/runbase.h"
#include "sandbox/userns.h"

struct al_provider_handle {
	al_ct_config cfg;
	al_facts *facts;
	al_run_registry runs;
	atomic_uint seq;
};

static int ct_probe(const char *config_json, al_facts **out, al_error **err)
{
	al_ct_config cfg;
	int rc = al_ct_config_parse(config_json, &cfg, err);
	if (rc < 0)
		return rc;
	rc = al_ct_probe_facts(&cfg, out, err);
	al_ct_config_clear(&cfg);
	return rc;
}

static int ct_ensure(const char *config_json, al_provider_handle **out,
		     al_error **err)
{
	al_provider_handle *h = calloc(1, sizeof(*h));
	if (h == NULL)
		return -ENOMEM;
	int rc = al_ct_config_parse(config_json, &h->cfg, err);
	if (rc == 0) {
		rc = al_ct_probe_facts(&h->cfg, &h->facts, err);
		if (rc < 0)
			al_ct_config_clear(&h->cfg);
	}
	if (rc < 0) {
		free(h);
		return rc;
	}
	al_run_registry_init(&h->runs);
	*out = h;
	return 0;
}

static int ct_health(al_provider_handle *h, al_error **err)
{
	if (!h->facts->available)
		return al_error_set(err, AL_ERR_UNAVAILABLE, ENOSYS,
				    "container_unavailable",
				    "the container runtime is not available");
	return 0;
}

static int check_request(const al_facts *f, const al_request *req,
			 al_result *res)
{
	if (!f->available)
		return al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					     "container_unavailable");
	if (al_facts_find_language(f, req->language) == NULL)
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

/* The request's image from the store, and its interpreter: the host
 * toolchain's executable name in the image's /usr/local/bin, /usr/bin or
 * /bin (the image's own binaries are never run on the host).  1 to go
 * on, else the outcome is set. */
static int use_image(al_provider_handle *h, const al_request *req,
		     al_toolchain *tc, char **rootfs, al_result *res)
{
	char digest[65];
	if (al_ct_image_resolve(h->cfg.images_dir, req->image, digest, rootfs) <
	    0)
		return al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					     "image_unavailable");
	const char *base = strrchr(tc->path, '/');
	base = base ? base + 1 : tc->path;
	static const char *const dirs[] = {"/usr/local/bin", "/usr/bin", "/bin"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char *inside = al_strdup_printf("%s/%s", dirs[i], base);
		char *host = inside ? al_strdup_printf("%s%s", *rootfs, inside)
				    : NULL;
		bool found = host != NULL && access(host, X_OK) == 0;
		free(host);
		if (found) {
			free(tc->path);
			tc->path = inside;
			return 1;
		}
		free(inside);
	}
	return al_result_set_outcome(res, AL_OUTCOME_UNSUPPORTED_LANGUAGE,
				     "image_lacks_toolchain");
}

static int ct_execute(al_provider_handle *h, const al_exec *exec,
		      al_result *res, al_error **err)
{
	const al_request *req = exec->request;
	al_run_entry entry = {0};
	al_rundir rd = {0};
	al_toolchain *tc = NULL;
	al_plan plan = {0};
	char **envp = NULL;
	char *path_env = NULL;
	al_sb_uid slot = {.fd = -1};
	al_bundle_use bu = {0};
	al_runlog log = {.fd = -1};
	int ws_fd = -1, store_fd = -1;
	char *image_rootfs = NULL;
	int rc;

	snprintf(res->run_id, sizeof(res->run_id), "%s", exec->run_id);
	res->started_at_ms = al_now_ms();
	if (res->provider == NULL)
		res->provider = al_facts_dup(h->facts);
	al_run_registry_add(&h->runs, &entry, exec->run_id, exec->cancel);

	rc = check_request(h->facts, req, res);
	if (rc <= 0)
		goto out;
	/* A compiled language's build step runs in the sandbox provider's
	 * build sandbox; the container provider has none. */
	if (al_language_compiled(req->language)) {
		rc = al_result_set_outcome(res, AL_OUTCOME_UNSUPPORTED_LANGUAGE,
					   "build_needs_sandbox");
		goto out;
	}
	char *cache = al_provider_cache_dir();
	int orc = al_toolchain_observe(req->language, NULL, cache, &tc, NULL);
	free(cache);
	if (orc < 0) {
		rc = al_result_set_outcome(res, AL_OUTCOME_UNSUPPORTED_LANGUAGE,
					   NULL);
		goto out;
	}
	if (req->image != NULL) {
		rc = use_image(h, req, tc, &image_rootfs, res);
		if (rc <= 0)
			goto out;
	}
	al_error *setup_err = NULL;
	if (al_bundle_use_init(&bu, exec, &setup_err) < 0) {
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
	/* a uid of its own: runs cannot signal or read each other */
	rc = al_sb_uid_take(h->cfg.uid_base, h->cfg.uid_count, &slot);
	if (rc < 0) {
		rc = al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					   rc == -EAGAIN ? "busy"
							 : "container_unavailable");
		goto out;
	}
	uid_t uid = slot.uid;
	rc = al_rundir_create(h->cfg.run_dir ? h->cfg.run_dir
					     : al_sb_run_base(req),
			      exec->run_id, &rd, &setup_err);
	if (rc == 0 &&
	    (chown(rd.workspace, uid, uid) < 0 || chown(rd.tmp, uid, uid) < 0))
		rc = al_error_set(&setup_err, AL_ERR_UNAVAILABLE, errno,
				  "workspace_setup_failed",
				  "cannot hand the workspace to the run's uid");
	/* the run directory is 0700: the runtime (root) reaches the
	 * mounts' sources through it, the program never sees it */
	if (rc == 0)
		rc = al_rundir_materialise(&rd, bu.bundle, bu.manifest, true,
					   uid, (gid_t)uid, &setup_err);
	if (rc == 0 && (ws_fd = al_rundir_workspace_fd(&rd)) < 0)
		rc = al_error_set(&setup_err, AL_ERR_UNAVAILABLE, -ws_fd,
				  "workspace_setup_failed",
				  "cannot open the workspace");
	char script[PATH_MAX];
	snprintf(script, sizeof(script), "/code/%s",
		 al_bundle_item_at(bu.bundle, 0)->path);
	if (rc == 0)
		rc = al_toolchain_plan(tc, script, "/build", req->argv,
				       req->argc, &plan, &setup_err);
	if (rc < 0) {
		const char *why = al_error_get_reason(setup_err);
		rc = al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					   why[0] ? why : "workspace_setup_failed");
		al_error_free(setup_err);
		goto out;
	}
	path_env = al_env_path_for(tc->path);
	bool inbox = exec->inbox_dir != NULL && exec->inbox_acks_dir != NULL;
	al_env_base base = {.path = path_env, .home = "/workspace",
			    .tmpdir = "/tmp",
			    .inbox = inbox ? "/inbox" : NULL,
			    .inbox_acks = inbox ? "/inbox-acks" : NULL};
	if (path_env == NULL || al_env_build(&base, exec, &envp) < 0) {
		rc = -ENOMEM;
		goto out;
	}
	al_output_fn stream = req->grant.streaming ? exec->on_output : NULL;
	char name[96];
	al_ct_run run = {
		.cfg = &h->cfg,
		.exec = exec,
		.req = req,
		.rd = &rd,
		.envp = envp,
		.extra_roots = tc->extra_roots,
		.uid = uid,
		.has_build_dir = plan.build_argv != NULL,
		.name = name,
		.on_output = stream,
		.on_output_ctx = exec->on_output_ctx,
		.image_rootfs = image_rootfs,
	};
	if (plan.build_argv != NULL) {
		snprintf(name, sizeof(name), "%s-%d-%u-b", exec->run_id,
			 (int)getpid(), atomic_fetch_add(&h->seq, 1));
		run.argv = plan.build_argv;
		run.build = true;
		rc = al_ct_run_step(&run, res, err);
		if (rc < 0 || res->outcome != AL_OUTCOME_COMPLETED)
			goto out;
		clear_output(res);
	}
	snprintf(name, sizeof(name), "%s-%d-%u", exec->run_id, (int)getpid(),
		 atomic_fetch_add(&h->seq, 1));
	run.argv = plan.run_argv;
	run.build = false;
	run.with_stdin = true;
	store_fd = al_artifacts_open_dir(exec->artifact_dir);
	al_runlog_open(&log, store_fd, req->limits.output_bytes, stream,
		       exec->on_output_ctx);
	run.on_output = al_runlog_output;
	run.on_output_ctx = &log;
	rc = al_ct_run_step(&run, res, err);
	al_runlog_close(&log);
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
out:
	al_run_registry_remove(&h->runs, &entry);
	if (rd.root != NULL && al_rundir_remove(&rd) < 0 && rc == 0)
		rc = al_error_set(err, AL_ERR_IO, EIO, NULL,
				  "cannot remove the run directory");
	al_sb_uid_give(&slot);
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
	free(image_rootfs);
	return rc;
}

static int ct_interrupt(al_provider_handle *h, const char *run_id,
			al_error **err)
{
	return al_run_registry_interrupt_run(&h->runs, run_id, err);
}

static int ct_release(al_provider_handle *h, al_error **err)
{
	if (h == NULL)
		return 0;
	int busy = al_run_registry_check_idle(&h->runs, err);
	if (busy < 0)
		return busy;
	al_run_registry_destroy(&h->runs);
	al_facts_free(h->facts);
	al_ct_config_clear(&h->cfg);
	free(h);
	return 0;
}

const al_provider_ops al_container_provider = {
	.id = "container",
	.probe = ct_probe,
	.ensure = ct_ensure,
	.health = ct_health,
	.execute = ct_execute,
	.interrupt = ct_interrupt,
	.release = ct_release,
};
