/* One container run (a build or run step): its bundle, its keeper, the
 * runtime started detached, supervision (deadline, output, cancel), the
 * limit a kill came from, and `runtime delete` whatever happened. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "container/container.h"
#include "core/util.h"
#include "cgroup/cgroup.h"
#include "sandbox/warm_inbox.h"

/* The file `file` of the cgroup `cgpath` in the v1 hierarchy that holds
 * controller `ctrl` (from /proc/self/mountinfo), or "" when none. */
static void cgroup_file(const char *ctrl, const char *cgpath, const char *file,
			char *out, size_t len)
{
	out[0] = '\0';
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (f == NULL)
		return;
	char line[1024];
	while (fgets(line, sizeof(line), f) != NULL) {
		char root[256], mnt[256], rest[512];
		if (sscanf(line, "%*s %*s %*s %255s %255s %511[^\n]", root, mnt,
			   rest) != 3)
			continue;
		const char *dash = strstr(rest, " - cgroup ");
		if (dash == NULL)
			continue;
		const char *super = strrchr(dash, ' ');
		char opts[256];
		snprintf(opts, sizeof(opts), ",%s,", super ? super + 1 : "");
		char want[32];
		snprintf(want, sizeof(want), ",%s,", ctrl);
		if (strstr(opts, want) == NULL)
			continue;
		size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
		if (rl > 0 && strncmp(cgpath, root, rl) != 0)
			continue;
		snprintf(out, len, "%s%s/%s", mnt, cgpath + rl, file);
		break;
	}
	fclose(f);
}

/* The number after `key` in a cgroup file of "key value" lines; 0. */
static uint64_t cgroup_count(const char *path, const char *key)
{
	FILE *f = path[0] ? fopen(path, "re") : NULL;
	if (f == NULL)
		return 0;
	char k[64];
	unsigned long long v;
	uint64_t found = 0;
	while (fscanf(f, "%63s %llu", k, &v) == 2)
		if (strcmp(k, key) == 0)
			found = v;
	fclose(f);
	return found;
}

/* Removes the container's cgroup from every hierarchy where it is left
 * (a runtime's delete can meet a cgroup the kernel still holds for an
 * instant, and leaves it): empty directories of our own naming only,
 * retried briefly.  0, or -EBUSY when one stays. */
static int cgroups_remove(const char *cgpath)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (f == NULL)
		return 0;
	char line[1024];
	int rc = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		char root[256], mnt[256], rest[512];
		if (sscanf(line, "%*s %*s %*s %255s %255s %511[^\n]", root, mnt,
			   rest) != 3 ||
		    (strstr(rest, " - cgroup ") == NULL &&
		     strstr(rest, " - cgroup2 ") == NULL))
			continue;
		size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
		if (rl > 0 && strncmp(cgpath, root, rl) != 0)
			continue;
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s%s", mnt, cgpath + rl);
		for (int i = 0; i < 250 && rmdir(dir) < 0 && errno == EBUSY;
		     i++) {
			struct timespec ts = {0, 2 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		if (access(dir, F_OK) == 0)
			rc = -EBUSY;
	}
	fclose(f);
	return rc;
}

static int runtime_delete(const al_ct_config *cfg, const char *binary,
			  const char *state, const char *name)
{
	const char *sub[] = {"delete", "--force", name, NULL};
	char **argv = al_ct_variant_argv(cfg->variant, binary, state, sub);
	int rc = argv ? al_ct_run_quiet(argv, NULL, 0) : -ENOMEM;
	al_ct_strv_free(argv);
	return rc;
}

/* The Docker Engine variant: the same bundle is written (the mount plan
 * translated once), its bind mounts and /tmp handed to the Engine. */
static int docker_step(const al_ct_run *r, al_result *res, al_error **err)
{
	const al_request *req = r->req;
	const al_ct_config *cfg = r->cfg;
	const al_ct_engine *eng = al_ct_engine_load();
	if (eng == NULL)
		return al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					     "container_unavailable");
	char bundle[PATH_MAX], acks[PATH_MAX], cfgp[PATH_MAX + 16];
	snprintf(bundle, sizeof(bundle), "%s/bundle-%s", r->rd->root,
		 r->build ? "build" : "run");
	snprintf(acks, sizeof(acks), "%s/acks", r->rd->root);
	bool inbox = !r->build && r->exec->inbox_dir != NULL &&
		     r->exec->inbox_acks_dir != NULL;
	if ((mkdir(bundle, 0755) < 0 && errno != EEXIST) ||
	    (inbox && ((mkdir(acks, 0700) < 0 && errno != EEXIST) ||
		       chown(acks, r->uid, r->uid) < 0)))
		return al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					     "container_setup_failed");
	al_ct_spec_in in = {
		.req = req, .rd = r->rd, .bundle_dir = bundle, .argv = r->argv,
		.envp = r->envp, .extra_roots = r->extra_roots, .uid = r->uid,
		.cgroups_path = "", .netns_path = "", .tmp_bytes = cfg->tmp_bytes,
		.build = r->build, .has_build_dir = r->has_build_dir,
		.inbox_dir = inbox ? r->exec->inbox_dir : NULL,
		.acks_dir = inbox ? acks : NULL, .init_path = "/dev/null",
		.oci_seccomp = cfg->variant->oci_seccomp,
		.seccomp_errno = cfg->variant->seccomp_errno,
	};
	al_error *setup_err = NULL;
	if (al_ct_spec_write(&in, &setup_err) < 0) {
		al_error_free(setup_err);
		return al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					     "container_setup_failed");
	}
	snprintf(cfgp, sizeof(cfgp), "%s/config.json", bundle);
	json_t *spec = json_load_file(cfgp, 0, NULL);
	json_t *mounts = json_object_get(spec, "mounts");
	size_t n = json_array_size(mounts);
	char **binds = calloc(n + 1, sizeof(*binds));
	char tmp_opts[256] = "";
	size_t k = 0;
	for (size_t i = 0; binds != NULL && i < n; i++) {
		json_t *m = json_array_get(mounts, i);
		const char *type = json_string_value(json_object_get(m, "type"));
		const char *dst =
			json_string_value(json_object_get(m, "destination"));
		const char *src = json_string_value(json_object_get(m, "source"));
		json_t *opts = json_object_get(m, "options");
		if (type == NULL || dst == NULL || src == NULL)
			continue;
		if (strcmp(type, "tmpfs") == 0 && strcmp(dst, "/tmp") == 0) {
			for (size_t j = 0; j < json_array_size(opts); j++) {
				const char *o =
					json_string_value(json_array_get(opts, j));
				size_t len = strlen(tmp_opts);
				if (o && strncmp(o, "size=", 5) == 0)
					snprintf(tmp_opts + len,
						 sizeof(tmp_opts) - len, "%s%s",
						 len ? "," : "", o);
				else if (o && strncmp(o, "mode=", 5) == 0)
					snprintf(tmp_opts + len,
						 sizeof(tmp_opts) - len, "%s%s",
						 len ? "," : "", o);
			}
			continue;
		}
		if (strcmp(type, "bind") != 0 || strncmp(dst, "/dev", 4) == 0)
			continue;
		bool rw = false;
		for (size_t j = 0; j < json_array_size(opts); j++) {
			const char *o = json_string_value(json_array_get(opts, j));
			if (o && strcmp(o, "rw") == 0)
				rw = true;
		}
		binds[k++] = al_strdup_printf("%s:%s:%s", src, dst,
					      rw ? "rw" : "ro");
	}
	/* stdin: a file of the run, opened by airlock-init, which then
	 * becomes the program */
	bool with_in = r->with_stdin && req->has_stdin &&
		       req->stdin_data.len > 0;
	char **argv = (char **)r->argv;
	char **wrapped = NULL;
	char *init = NULL;
	int rc = 0;
	if (with_in && binds != NULL) {
		char inpath[PATH_MAX];
		snprintf(inpath, sizeof(inpath), "%s/stdin", r->rd->root);
		init = cfg->init_path ? strdup(cfg->init_path)
				      : al_ct_init_locate();
		int fd = open(inpath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
					      O_NOFOLLOW,
			      0444);
		bool ok = init != NULL && fd >= 0 &&
			  write(fd, req->stdin_data.data, req->stdin_data.len) ==
				  (ssize_t)req->stdin_data.len;
		if (fd >= 0)
			close(fd);
		size_t na = 0;
		while (r->argv[na] != NULL)
			na++;
		char **nb = ok ? realloc(binds, (k + 3) * sizeof(*binds)) : NULL;
		if (nb != NULL) {
			binds = nb;
			binds[k++] = al_strdup_printf("%s:/sbin/.airlock-exec:ro",
						      init);
			binds[k++] = al_strdup_printf(
				"%s:/sbin/.airlock-stdin:ro", inpath);
			binds[k] = NULL;
			wrapped = calloc(na + 4, sizeof(*wrapped));
		}
		if (wrapped == NULL) {
			free(init);
			al_ct_strv_free(binds);
			json_decref(spec);
			return al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
						     "container_setup_failed");
		}
		wrapped[0] = "/sbin/.airlock-exec";
		wrapped[1] = "stdin:/sbin/.airlock-stdin";
		wrapped[2] = "--";
		for (size_t i = 0; i < na; i++)
			wrapped[3 + i] = r->argv[i];
		argv = wrapped;
	}
	/* airlock's seccomp policy, as the Engine's profile */
	char *profile = json_dumps(
		json_object_get(json_object_get(spec, "linux"), "seccomp"),
		JSON_COMPACT);
	const al_limits *l = &req->limits;
	al_ct_docker_in din = {
		.socket = cfg->docker_socket,
		.req = req,
		.name = r->name,
		.argv = argv,
		.envp = r->envp,
		.binds = binds,
		.tmp_opts = tmp_opts,
		.seccomp = profile,
		.uid = r->uid,
		.memory = l->memory_bytes ? l->memory_bytes
					  : AL_SB_DEFAULT_MEMORY_BYTES,
		.pids = l->pids ? l->pids : AL_SB_DEFAULT_PIDS,
		.cancel = r->exec->cancel,
	};
	rc = binds ? eng->run(&din, res, err) : -ENOMEM;
	/* the log artifact and a streaming caller get the output whole */
	for (int s = 0; rc == 0 && r->on_output && s < 2; s++)
		if (res->output[s].len > 0)
			r->on_output(r->on_output_ctx, s, res->output[s].data,
				     res->output[s].len);
	if (rc == 0 && r->start_error && res->outcome != AL_OUTCOME_COMPLETED &&
	    res->output[1].len > 0)
		*r->start_error = al_strdup_printf(
			"%.*s", (int)(res->output[1].len > 300 ? 300
							 : res->output[1].len),
			(const char *)res->output[1].data);
	free(wrapped);
	free(init);
	free(profile);
	al_ct_strv_free(binds);
	json_decref(spec);
	return rc;
}

int al_ct_run_step(const al_ct_run *r, al_result *res, al_error **err)
{
	if (r->cfg->variant->engine)
		return docker_step(r, res, err);
	const al_request *req = r->req;
	const al_ct_config *cfg = r->cfg;
	char bundle[PATH_MAX], state[PATH_MAX], pidf[PATH_MAX],
	    acks[PATH_MAX], report_dir[PATH_MAX], report_file[PATH_MAX];
	char *binary = NULL, *parent = NULL, *cgpath = NULL, *init = NULL;
	char **argv = NULL, **term_argv = NULL;
	al_ct_keeper k = {.pid = -1, .go_fd = -1, .note_fd = -1};
	al_sb_inbox_fwd *fwd = NULL;
	int acks_fd = -1;
	bool inbox = !r->build && r->exec->inbox_dir != NULL &&
		     r->exec->inbox_acks_dir != NULL;
	bool started = false, failed_start = false;
	int rc;

	snprintf(bundle, sizeof(bundle), "%s/bundle-%s", r->rd->root,
		 r->build ? "build" : "run");
	snprintf(state, sizeof(state), "%s/state", r->rd->root);
	snprintf(pidf, sizeof(pidf), "%s/%s.pid", r->rd->root,
		 r->build ? "build" : "run");
	snprintf(acks, sizeof(acks), "%s/acks", r->rd->root);
	snprintf(report_dir, sizeof(report_dir), "%s/report-%s", r->rd->root,
		 r->build ? "build" : "run");
	snprintf(report_file, sizeof(report_file), "%s/report-%s/report",
		 r->rd->root, r->build ? "build" : "run");
	bool report_fd = cfg->variant->preserve_fds;
	const char *why = "container_setup_failed";
	init = cfg->init_path ? strdup(cfg->init_path) : al_ct_init_locate();
	if (init == NULL) {
		why = "container_unavailable";
		goto unavailable;
	}
	if (!report_fd && ((mkdir(report_dir, 0700) < 0 && errno != EEXIST) ||
			   chown(report_dir, r->uid, r->uid) < 0)) {
		goto unavailable;
	}
	if ((mkdir(bundle, 0755) < 0 && errno != EEXIST) ||
	    (mkdir(state, 0700) < 0 && errno != EEXIST) ||
	    (inbox && ((mkdir(acks, 0700) < 0 && errno != EEXIST) ||
		       chown(acks, r->uid, r->uid) < 0))) {
		goto unavailable;
	}
	binary = al_ct_variant_locate(cfg->variant);
	if (binary == NULL) {
		why = "container_unavailable";
		goto unavailable;
	}
	rc = al_ct_cgroup_parent(&parent);
	if (rc < 0)
		goto unavailable;
	cgpath = al_strdup_printf("%s/airlock-ctr-%s", parent, r->name);
	const char *sub_fd[] = {"run",	    "--detach", "--preserve-fds",
				"1",	    "--pid-file", pidf,
				"--bundle", bundle,	  r->name,
				NULL};
	const char *sub_file[] = {"run",      "--detach", "--pid-file", pidf,
				  "--bundle", bundle,	  r->name,	NULL};
	const char *const *sub = report_fd ? sub_fd : sub_file;
	argv = al_ct_variant_argv(cfg->variant, binary, state, sub);
	const char *term_sub[] = {"kill", r->name, "TERM", NULL};
	term_argv = al_ct_variant_argv(cfg->variant, binary, state, term_sub);
	if (cgpath == NULL || argv == NULL || term_argv == NULL) {
		goto unavailable;
	}
	bool stdin_pipe = r->with_stdin && req->has_stdin &&
			  req->stdin_data.len > 0;
	al_ct_launch l = {.runtime_argv = argv,
			  .loopback = req->grant.network == AL_NETWORK_LOOPBACK,
			  .stdin_pipe = stdin_pipe,
			  .pid_file = pidf,
			  .report_fd = report_fd,
			  .report_file = report_fd ? NULL : report_file,
			  .term_argv = term_argv};
	al_error *setup_err = NULL;
	rc = al_ct_keeper_start(&l, &k, &setup_err);
	if (rc == 0) {
		al_ct_spec_in in = {
			.req = req,
			.rd = r->rd,
			.bundle_dir = bundle,
			.argv = r->argv,
			.envp = r->envp,
			.extra_roots = r->extra_roots,
			.uid = r->uid,
			.cgroups_path = cgpath,
			.netns_path = k.netns,
			.tmp_bytes = cfg->tmp_bytes,
			.oci_seccomp = cfg->variant->oci_seccomp,
			.proc_paths = cfg->variant->proc_paths,
			.seccomp_errno = cfg->variant->seccomp_errno,
			.build = r->build,
			.has_build_dir = r->has_build_dir,
			.inbox_dir = inbox ? r->exec->inbox_dir : NULL,
			.acks_dir = inbox ? acks : NULL,
			.init_path = init,
			.report_dir = report_fd ? NULL : report_dir,
			.image_rootfs = r->image_rootfs,
		};
		rc = al_ct_spec_write(&in, &setup_err);
	}
	if (rc == 0 && inbox) {
		acks_fd = open(acks, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
					     O_NOFOLLOW);
		rc = acks_fd < 0 ? -errno
				 : al_sb_inbox_fwd_start(r->exec->inbox_dir,
							 r->exec->inbox_acks_dir,
							 NULL, acks_fd, &fwd);
	}
	if (rc == 0)
		rc = al_ct_keeper_go(&k);
	if (rc < 0) {
		al_error_free(setup_err);
		goto unavailable;
	}
	started = true;
	al_supervise_opts opts = {
		.stdin_data = stdin_pipe ? &req->stdin_data : NULL,
		.output_cap = req->limits.output_bytes,
		.wall_ms = req->limits.wall_ms,
		.grace_ms = AL_DEFAULT_GRACE_MS,
		.cancel = r->exec->cancel,
		.on_output = r->on_output,
		.on_output_ctx = r->on_output_ctx,
		/* the inbox's forwarding thread, once the run lasts a tick */
		.later = fwd != NULL ? al_sb_inbox_fwd_begin : NULL,
		.later_ctx = fwd,
		.later_ms = AL_SB_INBOX_TICK_MS,
	};
	al_supervise_result sr;
	void *sigctx = k.child.signal_ctx;
	rc = al_supervise(&k.child, &opts, &sr, err);
	free(sigctx);
	k.child.signal_ctx = NULL;
	k.child.pid = -1;
	/* a runtime stopped by the deadline or a cancel while it started
	 * the container: the outcome is that, not a failed start */
	failed_start = al_ct_keeper_start_failed(&k) &&
		       (rc < 0 || sr.end == AL_END_EXITED);
	al_ct_keeper_close_note(&k);
	if (rc == 0 && failed_start) {
		/* the runtime's own words are on stderr: the probe shows
		 * them as the reason */
		if (r->start_error != NULL && sr.output[1].len > 0)
			*r->start_error = al_strdup_printf(
				"%.*s", (int)(sr.output[1].len > 400
						      ? 400
						      : sr.output[1].len),
				(const char *)sr.output[1].data);
		al_supervise_result_clear(&sr);
		rc = al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					   "container_start_failed");
	} else if (rc == 0) {
		rc = al_supervise_to_result(&sr, res);
		al_supervise_result_clear(&sr);
	}
	if (fwd != NULL) {
		int frc = al_sb_inbox_fwd_stop(fwd);
		fwd = NULL;
		if (frc < 0 && rc == 0)
			rc = al_error_set(err, AL_ERR_IO, -frc, NULL,
					  "cannot mirror the inbox "
					  "acknowledgements");
	}
	if (rc == 0 && !failed_start) {
		/* the cgroup's peak, not one process's RSS (v1) */
		char path[PATH_MAX];
		cgroup_file("memory", cgpath, "memory.max_usage_in_bytes", path,
			    sizeof(path));
		FILE *f = path[0] ? fopen(path, "re") : NULL;
		unsigned long long peak = 0;
		if (f != NULL && fscanf(f, "%llu", &peak) == 1 && peak > 0)
			res->usage.peak_memory_bytes = peak;
		if (f != NULL)
			fclose(f);
	}
	if (rc == 0 && res->outcome == AL_OUTCOME_KILLED) {
		char path[PATH_MAX];
		cgroup_file("memory", cgpath, "memory.oom_control", path,
			    sizeof(path));
		if (cgroup_count(path, "oom_kill") > 0)
			al_result_set_outcome(res, AL_OUTCOME_KILLED,
					      "memory_limit");
		else {
			cgroup_file("pids", cgpath, "pids.events", path,
				    sizeof(path));
			if (cgroup_count(path, "max") > 0 && res->reason &&
			    strcmp(res->reason, "signal") == 0)
				al_result_set_outcome(res, AL_OUTCOME_KILLED,
						      "pids_limit");
		}
	}
	goto out;
unavailable:
	rc = al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE, why);
out:
	if (fwd != NULL)
		al_sb_inbox_fwd_stop(fwd);
	if (acks_fd >= 0)
		close(acks_fd);
	al_ct_keeper_discard(&k);
	/* the runtime's state and cgroups, whatever happened */
	if (started && binary != NULL &&
	    runtime_delete(cfg, binary, state, r->name) != 0 &&
	    !failed_start && rc == 0)
		rc = al_error_set(err, AL_ERR_INTERNAL, EBUSY, NULL,
				  "the container could not be deleted");
	if (started && cgpath != NULL && cgroups_remove(cgpath) < 0 && rc == 0)
		rc = al_error_set(err, AL_ERR_INTERNAL, EBUSY, NULL,
				  "the container's cgroup could not be removed");
	al_ct_strv_free(argv);
	al_ct_strv_free(term_argv);
	free(cgpath);
	free(parent);
	free(binary);
	free(init);
	return rc;
}
