/* One step of a request inside a fresh sandbox: cgroups, mount plan,
 * launch, supervision, usage from the cgroups, cleanup. */
#include "core/log.h"
#include "sandbox/run.h"
#include "sandbox/netns_ahead.h"
#include "sandbox/cgroups_ahead.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "child/shepherd.h"
#include "child/supervise.h"
#include "cgroup/cgroup.h"
#include "sandbox/launch.h"
#include "sandbox/mounts.h"
#include "sandbox/tool_mount.h"
#include "sandbox/warm_inbox.h"

/* base: the cgroups' usage when a warm member was handed its request
 * (the interpreter's start is not the run's), or NULL. */
static void apply_cgroup_usage(const al_sb_cgrun *cg, const al_sb_cgusage *base,
			       bool build, al_result *res)
{
	al_sb_cgusage u;
	al_sb_cgrun_usage(cg, &u);
	if (u.have_cpu) {
		uint64_t bu = 0, bs = 0;
		if (base != NULL && base->have_cpu) {
			bu = base->cpu_user_us;
			bs = base->cpu_sys_us;
		}
		res->usage.cpu_user_ms =
			(u.cpu_user_us > bu ? u.cpu_user_us - bu : 0) / 1000;
		res->usage.cpu_sys_ms =
			(u.cpu_sys_us > bs ? u.cpu_sys_us - bs : 0) / 1000;
	}
	if (u.have_peak)
		res->usage.peak_memory_bytes = u.peak_memory_bytes;
	/* A compiler driver outlives its killed back end (gcc reports
	 * cc1plus killed and exits 1): the build says which limit. */
	if (build && u.oom_killed && res->outcome == AL_OUTCOME_FAILED)
		al_result_set_outcome(res, AL_OUTCOME_FAILED, "memory_limit");
	if (res->outcome != AL_OUTCOME_KILLED)
		return;
	if (u.oom_killed)
		al_result_set_outcome(res, AL_OUTCOME_KILLED, "memory_limit");
	else if (u.pids_max_hit && res->reason != NULL &&
		 strcmp(res->reason, "signal") == 0)
		al_result_set_outcome(res, AL_OUTCOME_KILLED, "pids_limit");
}

/* The parent's judgement of the inputs the init wrote into the tmpfs. */
static int check_inputs(void *ctx, int ws_fd)
{
	const al_manifest *m = ctx;
	return m != NULL ? al_bundle_verify_inputs(m, ws_fd, NULL) : 0;
}

static const al_limits *step_limits(const al_sb_step *s)
{
	return s->limits != NULL ? s->limits : &s->exec->request->limits;
}

int al_sb_step_supervise(const al_sb_step *s, al_child *child,
			 al_sb_cgrun *cg, const al_sb_cgusage *base,
			 struct al_sb_inbox_fwd *fwd, int *init_pidfd,
			 al_result *res, al_error **err)
{
	const al_request *req = s->exec->request;
	bool stdin_pipe = al_sb_step_stdin(s);
	al_supervise_opts opts = {
		.stdin_data = stdin_pipe && al_exec_stdin_fd(s->exec) < 0
				      ? &req->stdin_data
				      : NULL,
		.output_cap = step_limits(s)->output_bytes,
		.wall_ms = step_limits(s)->wall_ms,
		.grace_ms = AL_DEFAULT_GRACE_MS,
		.cancel = s->exec->cancel,
		.on_output = s->on_output,
		.on_output_ctx = s->on_output_ctx,
		.later = fwd != NULL ? al_sb_inbox_fwd_begin : NULL,
		.later_ctx = fwd,
		.later_ms = AL_SB_INBOX_TICK_MS,
		.end_at_report = init_pidfd != NULL,
	};
	al_supervise_result sr;
	void *sigctx = child->signal_ctx;
	int rc = al_supervise(child, &opts, &sr, err);
	if (rc == 0)
		rc = al_supervise_to_result(&sr, res);
	/* An init that reported is left exiting; it may still be listed. */
	pid_t exiting = 0;
	if (init_pidfd != NULL) {
		*init_pidfd = sr.init_exiting ? child->pidfd : -1;
		exiting = sr.init_exiting ? child->pid : 0;
		child->pidfd = -1;
		child->pid = -1;
	}
	al_supervise_result_clear(&sr);
	/* Anything else still in the cgroups is killed and waited for
	 * before the usage is read and they are removed. */
	for (int i = 0; i < 500 && !al_sb_cgrun_run_gone_but(cg, exiting);
	     i++) {
		al_sb_cgrun_kill(cg);
		struct timespec ts = {0, 2 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	al_sb_signal_ctx_free(sigctx);
	if (rc == 0)
		apply_cgroup_usage(cg, base, s->build, res);
	return rc;
}

bool al_sb_step_stdin(const al_sb_step *s)
{
	const al_request *req = s->exec->request;
	if (s->with_stdin && al_exec_stdin_fd(s->exec) >= 0)
		return true; /* the live stream */
	return s->with_stdin && req->has_stdin && req->stdin_data.len > 0;
}

uint64_t al_sb_workspace_bytes(const al_sb_config *cfg,
			       const al_request *req)
{
	if (req->grant.workspace == AL_WORKSPACE_NONE)
		return 0;
	if (req->limits.workspace_bytes > 0)
		return req->limits.workspace_bytes;
	return req->grant.workspace == AL_WORKSPACE_RW ? cfg->workspace_bytes
						       : 0;
}

uint64_t al_sb_socket_bytes(const al_sb_config *cfg, const al_limits *l)
{
	return l->socket_bytes > 0 ? l->socket_bytes : cfg->socket_bytes;
}

/* The step's cgroups, limited and their socket bound written before
 * anything of the run exists (sockets made earlier would go uncharged):
 * the set made ahead when one is ready, else made now. */
static int step_cgroups(const al_sb_step *s, const al_limits *lim,
			al_sb_cgrun *cg, al_error **err)
{
	const al_sb_cgroups *cgs = &s->ctx->cg;
	al_sb_cg_limits want = {
		.valid = true,
		.bits = lim->set & (AL_LIMIT_MEMORY_BYTES | AL_LIMIT_PIDS),
		.memory_bytes = lim->memory_bytes,
		.pids = lim->pids,
		.socket_bytes = al_sb_socket_bytes(&s->ctx->cfg, lim),
	};
	al_sb_cg_taken taken = s->cg_ahead != NULL
				       ? al_sb_cg_ahead_take(s->cg_ahead, cg,
							     &want)
				       : AL_SB_CG_NONE;
	int rc = 0;
	switch (taken) {
	case AL_SB_CG_NONE:
		rc = al_sb_cgrun_create(cgs, s->cg_name, lim, cg, err);
		if (rc < 0) {
			/* the take counted this step: it is over */
			if (s->cg_ahead != NULL)
				al_sb_cg_ahead_give(s->cg_ahead, cg, -1, NULL);
			return rc;
		}
		break;
	case AL_SB_CG_UNLIMITED:
		rc = al_sb_cgrun_limit(cgs, cg, lim);
		break;
	case AL_SB_CG_OTHER:
		/* v1 takes a memory limit only at or below the swap one:
		 * relimit writes them in the order that keeps that */
		rc = al_sb_cgrun_relimit(cgs, cg, lim);
		break;
	case AL_SB_CG_AS_WANTED:
		return 0;
	}
	if (rc == 0)
		rc = al_sb_cgrun_limit_sockets(cgs, cg, want.socket_bytes);
	if (rc == 0)
		return 0;
	if (taken == AL_SB_CG_NONE)
		al_sb_cgrun_destroy(cg);
	else
		al_sb_cg_ahead_give(s->cg_ahead, cg, -1, NULL);
	return al_error_set(err, AL_ERR_UNAVAILABLE, -rc, "sandbox_unavailable",
			    "limiting the run's cgroups failed");
}

/* The step's cgroups once it is over: back to be removed behind (after
 * init_pidfd's init, when >= 0, is reaped; the uid lock goes with it), or
 * removed now. */
static int step_cgroups_done(const al_sb_step *s, al_sb_cgrun *cg,
			     int init_pidfd)
{
	if (s->cg_ahead != NULL)
		return al_sb_cg_ahead_give(s->cg_ahead, cg, init_pidfd,
					   init_pidfd >= 0 ? s->uid_slot
							   : NULL);
	al_child_reap(init_pidfd);
	return al_sb_cgrun_destroy(cg);
}

/* The program's step of a handle that makes cgroups ahead ends on its
 * init's report; a build step waits for its init's exit, as the run's
 * uid stays in use for the program after it. */
static bool step_ends_on_report(const al_sb_step *s)
{
	return s->cg_ahead != NULL && !s->build;
}

int al_sb_run_step(const al_sb_step *s, al_result *res, al_error **err)
{
	const al_request *req = s->exec->request;
	const al_sb_context *ctx = s->ctx;
	al_sb_cgrun cg;
	al_sb_mount_plan plan = {0};
	al_error *setup_err = NULL;
	int rc;

	const al_limits *lim = step_limits(s);
	rc = step_cgroups(s, lim, &cg, &setup_err);
	if (rc < 0) {
		/* the reason stays typed; the operator's log gets why */
		al_logf(AL_LOG_WARN, s->exec->run_id, "sandbox: %s",
			setup_err != NULL ? al_error_get_message(setup_err)
					  : "creating the run's cgroups failed");
		al_error_free(setup_err);
		return al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					     "sandbox_unavailable");
	}
	/* Mounts are made by the init as host root (privileged; then the
	 * tmpfs belongs to the run's host uid) or as root of the run's user
	 * namespace (unprivileged; already the caller's uid outside). */
	uid_t ws_uid = ctx->privileged ? s->uid : 0;
	uint64_t ws_bytes = al_sb_workspace_bytes(&ctx->cfg, req);
	bool ws_tmpfs = ws_bytes > 0;
	/* The inbox is the program's, not the build step's. */
	bool inbox = !s->build && s->exec->inbox_dir != NULL &&
		     s->exec->inbox_acks_dir != NULL;
	int acks_fd = -1;
	int init_pidfd = -1; /* an init still exiting */
	al_sb_inbox_fwd *fwd = NULL;
	/* The toolbelt is the program's too. */
	bool tool = !s->build && s->exec->tool_dir != NULL &&
		    s->exec->tool_bin_dir != NULL;
	al_sb_mount_params mp = {
		.code_dir = s->rd->code_dir,
		.workspace_dir = s->rd->workspace,
		.workspace = req->grant.workspace,
		.workspace_bytes = ws_bytes,
		.ws_uid = ws_uid,
		.ws_gid = (gid_t)ws_uid,
		.network = req->grant.network,
		.tmp_bytes = ctx->cfg.tmp_bytes,
		.extra_roots = s->extra_roots,
		.build_dir = s->has_build_dir ? s->rd->tmp : NULL,
		.build_rw = s->build,
		.inbox_dir = inbox ? s->exec->inbox_dir : NULL,
		.inbox_acks_bytes = ctx->cfg.inbox_acks_bytes,
		.tool_dir = tool ? s->exec->tool_dir : NULL,
		.tool_bin_dir = tool ? s->exec->tool_bin_dir : NULL,
	};
	/* the token is the run's to read (0600): its uid owns it, and a
	 * token that replaces it keeps that owner */
	if (tool && ctx->privileged &&
	    al_sb_tool_own(s->exec->tool_dir, s->uid) < 0) {
		rc = al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					   "sandbox_unavailable");
		goto out;
	}
	rc = al_sb_mount_plan_build(&mp, &plan, err);
	if (rc < 0)
		goto out;

	al_rlimit_spec rl[AL_CHILD_RLIMITS_MAX];
	al_sb_launch l = {
		.privileged = ctx->privileged,
		.host_uid = s->uid,
		.host_gid = (gid_t)s->uid,
		.cap_last = ctx->cap_last,
		.mounts = &plan,
		.network = req->grant.network,
		.netns_fd = s->netns_ahead != NULL &&
					    req->grant.network !=
						    AL_NETWORK_HOST
				    ? al_sb_netns_ahead_take(s->netns_ahead)
				    : -1,
		.argv = s->argv,
		.envp = s->envp,
		.cwd = "/workspace",
		.rlimits = rl,
		.n_rlimits = al_child_rlimits(lim, rl),
		.stdin_pipe = al_sb_step_stdin(s),
		.stdin_src = s->with_stdin ? al_exec_stdin_fd(s->exec) : -1,
		.filter = &ctx->filter,
		.landlock = {.abi = ctx->landlock_abi,
			     .workspace_rw =
				     req->grant.workspace == AL_WORKSPACE_RW,
			     .build_rw = s->build,
			     .inbox_acks_rw = inbox,
			     .deny_tcp = req->grant.network == AL_NETWORK_NONE},
		.cgroups = &cg,
		.ws_fill = ws_tmpfs,
		.ws_ro = req->grant.workspace == AL_WORKSPACE_RO,
		.ws_items = al_bundle_item_at(s->bundle, 0),
		.n_ws_items = al_bundle_count(s->bundle),
		.ws_uid = ws_uid,
		.ws_gid = (gid_t)ws_uid,
		.ws_check = check_inputs,
		.ws_check_ctx = (void *)s->manifest,
		.ws_fd_out = s->ws_fd,
		.acks_fd_out = inbox ? &acks_fd : NULL,
	};
	al_child child;
	rc = al_sb_launch_start(&l, &child, &setup_err);
	/* the init has joined it (or failed): ours is not needed */
	if (l.netns_fd >= 0)
		close(l.netns_fd);
	/* the next run's cgroups made while this one runs, by a helper that
	 * stays to remove this one's (the network namespace, which costs
	 * far more CPU, is made after the run: made now, it slowed the
	 * init's setup on a two-core machine) */
	if (rc == 0 && s->cg_ahead != NULL)
		al_sb_cg_ahead_refill(s->cg_ahead);
	if (rc < 0) {
		const char *why = al_error_get_reason(setup_err);
		al_logf(AL_LOG_WARN, s->exec->run_id, "sandbox: %s",
			al_error_get_message(setup_err));
		rc = al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					   why[0] ? why : "sandbox_unavailable");
		al_error_free(setup_err);
		goto out;
	}
	/* the program's markers, mirrored into the run's acks directory
	 * while it lives and once more when it is over (warm_inbox.h) */
	int frc = inbox ? al_sb_inbox_fwd_start(s->exec->inbox_dir,
						s->exec->inbox_acks_dir, NULL,
						acks_fd, &fwd)
			: 0;
	rc = al_sb_step_supervise(s, &child, &cg, NULL, frc == 0 ? fwd : NULL,
				  step_ends_on_report(s) ? &init_pidfd : NULL,
				  res, err);
	if (frc == 0)
		frc = al_sb_inbox_fwd_stop(fwd);
	if (frc < 0 && rc == 0)
		rc = al_error_set(err, AL_ERR_IO, -frc, NULL,
				  "cannot mirror the inbox acknowledgements");
out:
	if (acks_fd >= 0)
		close(acks_fd);
	al_sb_mount_plan_clear(&plan);
	if (step_cgroups_done(s, &cg, init_pidfd) < 0 && rc == 0)
		rc = al_error_set(err, AL_ERR_INTERNAL, EBUSY, NULL,
				  "a run cgroup could not be removed");
	return rc;
}
