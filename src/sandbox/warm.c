/* Warm pool members: prepared ahead, handed one request, destroyed.  See
 * warm.h and docs/sandbox.md, "Warm pools". */
#include "sandbox/warm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "lang/languages.h"
#include "child/env.h"
#include "sandbox/launch.h"
#include "sandbox/mounts.h"
#include "sandbox/runbase.h"
#include "sandbox/warm_inbox.h"
#include "sandbox/warm_loaders.h"

static bool is_node(const char *language)
{
	return strcmp(language, "javascript") == 0;
}

static bool interp_start(const char *language)
{
	return strcmp(language, "python") == 0 || is_node(language);
}

bool al_sb_warm_supported(const char *language)
{
	/* typescript and the compiled languages have a build step (a
	 * sandbox of its own) first */
	return language != NULL && al_language_known(language) &&
	       strcmp(language, "typescript") != 0 &&
	       !al_language_compiled(language);
}

/* Variables the dynamic loader, libc or the interpreter read while
 * starting: a member started without them, so a request setting one goes
 * cold.  (PYTHON* is ignored by both: the plan runs python -E.)  node
 * reads NODE_OPTIONS, NODE_PATH and its other NODE_* at start, libuv
 * UV_*, OpenSSL its OPENSSL_* and SSL_CERT_*; HOME only for the global
 * module paths, which the loader recomputes. */
static bool env_affects_start(bool node, const char *name, size_t len)
{
	static const char *const prefixes[] = {"LD_", "GLIBC_", "MALLOC_",
					       "LC_", "LANG", NULL};
	static const char *const node_prefixes[] = {"NODE_", "UV_", "OPENSSL_",
						    "SSL_CERT_", NULL};
	for (const char *const *p = prefixes; *p != NULL; p++)
		if (len >= strlen(*p) && strncmp(name, *p, strlen(*p)) == 0)
			return true;
	for (const char *const *p = node_prefixes; node && *p != NULL; p++)
		if (len >= strlen(*p) && strncmp(name, *p, strlen(*p)) == 0)
			return true;
	return len == 2 && strncmp(name, "TZ", 2) == 0;
}

/* The limits a node member starts with when its pool has seen no run
 * yet: what a host gives a request that sets none (docs/configuration.md,
 * "Ceilings"): cpu_ms 900 000, file_bytes 1 GiB, open_files 256. */
void al_sb_warm_default_limits(al_limits *out)
{
	memset(out, 0, sizeof(*out));
	out->cpu_ms = 900000u;
	out->file_bytes = 1ull << 30;
	out->open_files = AL_DEFAULT_OPEN_FILES;
}

bool al_sb_warm_fixed_rlimits(const char *language)
{
	return language != NULL && is_node(language);
}

bool al_sb_warm_same_rlimits(const al_limits *a, const al_limits *b)
{
	al_rlimit_spec ra[AL_CHILD_RLIMITS_MAX], rb[AL_CHILD_RLIMITS_MAX];
	size_t na = al_child_rlimits(a, ra), nb = al_child_rlimits(b, rb);
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (ra[i].resource != rb[i].resource ||
		    ra[i].value != rb[i].value)
			return false;
	return true;
}

const char *al_sb_warm_mismatch(const al_sb_warm_class *c,
				const al_exec *exec, const char *tc_path)
{
	const al_request *req = exec->request;
	if (req->language == NULL || strcmp(req->language, c->language) != 0)
		return "language";
	/* a member's stdin carries its start header: a live stream needs a
	 * cold start */
	if (al_exec_stdin_fd(exec) >= 0)
		return "stdin_stream";
	if (!al_sb_warm_supported(req->language))
		return "language";
	if (req->grant.network != c->network)
		return "network";
	if (req->grant.workspace != c->workspace)
		return "workspace";
	/* a member's /workspace is a tmpfs of the config's default size
	 * (rw) or a read-only bind (ro): a size of the request's own is
	 * mounted by a cold init */
	if (req->limits.workspace_bytes > 0)
		return "workspace_bytes";
	/* a member's stack was laid out when it started */
	if (req->limits.stack_bytes > 0)
		return "stack_bytes";
	/* an inbox is two mounts and a Landlock rule the member has, or
	 * has not, from its start (half an inbox shows none: cold) */
	bool inbox = exec->inbox_dir != NULL && exec->inbox_acks_dir != NULL;
	if (inbox != c->inbox ||
	    (!inbox && (exec->inbox_dir != NULL || exec->inbox_acks_dir != NULL)))
		return "inbox";
	/* the toolbelt is two binds a member does not have */
	if (exec->tool_dir != NULL)
		return "toolbelt";
	if (tc_path == NULL || c->tc_path == NULL ||
	    strcmp(tc_path, c->tc_path) != 0)
		return "toolchain";
	/* A member sets its rlimits without privilege: one above what it
	 * inherited (ours) would fail there; cold reports it properly. */
	al_rlimit_spec rl[AL_CHILD_RLIMITS_MAX];
	size_t nrl = al_child_rlimits(&req->limits, rl);
	for (size_t i = 0; i < nrl; i++) {
		struct rlimit cur;
		rlim_t want = rl[i].resource == RLIMIT_CPU ? rl[i].value + 2
							   : rl[i].value;
		if (getrlimit(rl[i].resource, &cur) == 0 &&
		    cur.rlim_max != RLIM_INFINITY && want > cur.rlim_max)
			return "rlimit";
	}
	/* node cannot set its own: the member started with its class's */
	if (c->fixed_rlimits &&
	    !al_sb_warm_same_rlimits(&req->limits, &c->rlimits))
		return "rlimit";
	if (!interp_start(req->language))
		return NULL; /* execve gets the run's own environment */
	bool node = is_node(req->language);
	for (size_t i = 0; i < req->n_env; i++)
		if (env_affects_start(node, req->env[i].name,
				      strlen(req->env[i].name)))
			return "env";
	for (size_t i = 0; i < exec->n_host_env; i++)
		if (env_affects_start(node, exec->host_env[i],
				      strcspn(exec->host_env[i], "=")))
			return "env";
	return NULL;
}

/* ---- preparing --------------------------------------------------- */

static void member_free(al_sb_member *m)
{
	if (m->fail_fd >= 0)
		close(m->fail_fd);
	free(m->tc_path);
	free(m->inbox_dir);
	if (m->acks_fd >= 0)
		close(m->acks_fd);
	if (m->ws_fd >= 0)
		close(m->ws_fd);
	free(m);
}

int al_sb_member_prepare(const al_sb_context *ctx, const char *language,
			 al_network network, al_workspace_mode workspace,
			 bool inbox, const al_limits *start_limits,
			 const char *run_id, const char *cg_name,
			 al_sb_member **out, al_error **err)
{
	al_toolchain *tc = NULL;
	al_sb_mount_plan plan = {0};
	char *path_env = NULL;
	al_error *e = NULL;
	int rc;

	*out = NULL;
	if (!al_sb_warm_supported(language))
		return al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL, NULL,
				    "no warm start for this language");
	al_sb_member *m = calloc(1, sizeof(*m));
	if (m == NULL)
		return -ENOMEM;
	m->slot.fd = -1;
	m->cg.v2_fd = -1;
	m->child.pid = -1;
	m->fail_fd = -1;
	m->acks_fd = -1;
	m->ws_fd = -1;
	m->interp = interp_start(language);
	snprintf(m->cls.language, sizeof(m->cls.language), "%s", language);
	m->cls.network = network;
	m->cls.workspace = workspace;
	m->cls.inbox = inbox;
	if (al_sb_warm_fixed_rlimits(language)) {
		m->cls.fixed_rlimits = true;
		if (start_limits != NULL)
			m->cls.rlimits = *start_limits;
		else
			al_sb_warm_default_limits(&m->cls.rlimits);
	}

	rc = al_toolchain_observe(language, NULL, ctx->cache_dir, &tc, err);
	if (rc < 0)
		goto fail;
	m->tc_path = strdup(tc->path);
	if (m->tc_path == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	m->cls.tc_path = m->tc_path;
	uid_t uid = geteuid();
	if (ctx->privileged) {
		rc = al_sb_uid_take(ctx->cfg.uid_base, ctx->cfg.uid_count,
				    &m->slot);
		if (rc < 0) {
			al_error_set(err, AL_ERR_UNAVAILABLE, -rc, "busy",
				     "no uid for a warm member");
			goto fail;
		}
		uid = m->slot.uid;
	}
	/* where a cold run of this class would have its directory */
	al_request place;
	memset(&place, 0, sizeof(place));
	place.grant.workspace = workspace;
	rc = al_rundir_create(ctx->cfg.run_dir ? ctx->cfg.run_dir
					       : al_sb_run_base(&place),
			      run_id, &m->rd, err);
	if (rc < 0)
		goto fail;
	if (ctx->privileged &&
	    (chown(m->rd.workspace, uid, uid) < 0 ||
	     chown(m->rd.tmp, uid, uid) < 0)) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, errno,
				  "workspace_setup_failed",
				  "cannot hand the workspace to the member's uid");
		goto fail;
	}
	/* its inbox: RUN/inbox 0755 ours (warm_inbox.h) */
	if (inbox && (rc = al_sb_inbox_dir_create(m->rd.root,
						  &m->inbox_dir)) < 0) {
		al_error_set(err, AL_ERR_UNAVAILABLE, -rc,
			     "workspace_setup_failed",
			     "cannot make the member's inbox");
		goto fail;
	}
	/* Held to the run defaults (512 MiB, 256 pids) while idle; the
	 * request's own values are written at go. */
	al_limits idle = {0};
	rc = al_sb_cgrun_create(&ctx->cg, cg_name, &idle, &m->cg, err);
	if (rc < 0)
		goto fail;
	/* socket accounting on before the interpreter starts (its sockets
	 * would go uncharged); the request's own bound is written at go */
	rc = al_sb_cgrun_limit_sockets(&ctx->cg, &m->cg,
				       al_sb_socket_bytes(&ctx->cfg, &idle));
	if (rc < 0) {
		al_error_set(err, AL_ERR_UNAVAILABLE, -rc, "sandbox_unavailable",
			     "cannot bound the member's socket memory");
		goto fail;
	}

	uid_t ws_uid = ctx->privileged ? uid : 0;
	al_sb_mount_params mp = {
		.code_dir = m->rd.code_dir,
		.workspace_dir = m->rd.workspace,
		.workspace = workspace,
		.workspace_bytes = workspace == AL_WORKSPACE_RW
					   ? ctx->cfg.workspace_bytes
					   : 0,
		.ws_uid = ws_uid,
		.ws_gid = (gid_t)ws_uid,
		.network = network,
		.tmp_bytes = ctx->cfg.tmp_bytes,
		.extra_roots = tc->extra_roots,
		.inbox_dir = m->inbox_dir,
		.inbox_acks_bytes = ctx->cfg.inbox_acks_bytes,
		.live = true, /* its code and inputs come at go */
	};
	rc = al_sb_mount_plan_build(&mp, &plan, err);
	if (rc < 0)
		goto fail;

	/* The interpreter's start sees what a cold one sees, except the
	 * per-run variables, which the loader sets before the program. */
	path_env = al_env_path_for(tc->path);
	/* the baseline layer, locale and time zone included, as a cold
	 * start of the same run has it (child/env.h) */
	al_env_base eb = {.path = path_env, .home = "/workspace",
			  .tmpdir = "/tmp"};
	char **envp = NULL;
	int er = path_env != NULL ? al_env_baseline(&eb, &envp) : -ENOMEM;
	char *argv[] = {tc->path, "-E", "-s", "-c",
			(char *)al_sb_warm_python_loader, NULL};
	al_rlimit_spec rl[AL_CHILD_RLIMITS_MAX] = {{RLIMIT_CORE, 0}};
	size_t nrl = 1;
	if (is_node(language)) {
		/* `node -e LOADER`; the run's rlimits from the start (the
		 * start's CPU counts against RLIMIT_CPU as a cold start's
		 * does) */
		argv[1] = "-e";
		argv[2] = (char *)al_sb_warm_node_loader;
		argv[3] = NULL;
		nrl = al_child_rlimits(&m->cls.rlimits, rl);
	}
	if (!m->interp)
		argv[1] = NULL; /* prepared up to its execve: the header names it */
	if (er < 0) {
		al_env_free(envp);
		rc = -ENOMEM;
		goto fail;
	}
	al_sb_launch l = {
		.privileged = ctx->privileged,
		.host_uid = uid,
		.host_gid = (gid_t)uid,
		.cap_last = ctx->cap_last,
		.mounts = &plan,
		.network = network,
		.netns_fd = -1, /* a member makes its own, ahead anyway */
		.argv = argv,
		.envp = envp,
		.cwd = "/workspace",
		.rlimits = rl,
		.n_rlimits = nrl,
		.stdin_pipe = true, /* the header comes this way */
		.stdin_src = -1,    /* a pipe of its own, never our stdin */
		.filter = &ctx->filter,
		.landlock = {.abi = ctx->landlock_abi,
			     .workspace_rw = workspace == AL_WORKSPACE_RW,
			     .inbox_acks_rw = inbox,
			     .deny_tcp = network == AL_NETWORK_NONE},
		.cgroups = &m->cg,
		.wait_go = !m->interp,
		.go_fail_fd = &m->fail_fd,
		.ws_hand = workspace == AL_WORKSPACE_RW,
		.ws_fd_out = &m->ws_fd,
		.acks_fd_out = inbox ? &m->acks_fd : NULL,
	};
	rc = al_sb_launch_start(&l, &m->child, &e);
	al_env_free(envp);
	if (rc < 0) {
		al_error_set(err, al_error_get_code(e), -rc,
			     al_error_get_reason(e), "warm member start failed");
		al_error_free(e);
		goto fail;
	}
	goto out;
fail:
	al_sb_member_destroy(m);
	m = NULL;
out:
	al_sb_mount_plan_clear(&plan);
	free(path_env);
	al_toolchain_free(tc);
	*out = m;
	return rc < 0 ? rc : 0;
}

/* ---- go ---------------------------------------------------------- */

int al_sb_member_claim(const al_sb_context *ctx, al_sb_member *m,
		       const al_limits *limits)
{
	int rc = al_sb_cgrun_relimit(&ctx->cg, &m->cg, limits);
	if (rc == 0)
		rc = al_sb_cgrun_limit_sockets(&ctx->cg, &m->cg,
					       al_sb_socket_bytes(&ctx->cfg,
								  limits));
	if (rc < 0)
		return rc;
	/* usage is reported from here on */
	al_sb_cgrun_usage(&m->cg, &m->base);
	return 0;
}

/* A member waiting for its header reads it at once (one still starting
 * reads it as soon as it is up); one that takes this long is treated as
 * dead: nothing of the request has run, so it goes cold. */
#define HEADER_TIMEOUT_MS 10000

static int write_all(int fd, const char *buf, size_t len)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, buf + off, len - off);
		if (w > 0) {
			off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w == 0 || errno != EAGAIN)
			return w < 0 ? -errno : -EIO;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long spent = (long)(now.tv_sec - t0.tv_sec) * 1000 +
			     (now.tv_nsec - t0.tv_nsec) / 1000000;
		if (spent >= HEADER_TIMEOUT_MS)
			return -ETIMEDOUT;
		struct pollfd p = {fd, POLLOUT, 0};
		if (poll(&p, 1, (int)(HEADER_TIMEOUT_MS - spent)) < 0 &&
		    errno != EINTR)
			return -errno;
	}
	return 0;
}

/* "%010zu" then the NUL-terminated fields (warm_python.c): stdin mode,
 * rlimits, script index, argc, argv, env. */
static char *build_header(const al_sb_step *s, const char *script,
			  bool interp, bool with_stdin, size_t *len_out)
{
	al_rlimit_spec rl[AL_CHILD_RLIMITS_MAX];
	const al_limits *lim = &s->exec->request->limits;
	size_t nrl = al_child_rlimits(lim, rl);
	size_t argc = 0, idx = 0, len = 64 + nrl * 48;
	for (char *const *a = s->argv; *a != NULL; a++, argc++) {
		if (idx == 0 && argc > 0 && strcmp(*a, script) == 0)
			idx = argc;
		len += strlen(*a) + 1;
	}
	for (char *const *e = s->envp; *e != NULL; e++)
		len += strlen(*e) + 1;
	size_t envc = 0;
	for (char *const *e = s->envp; *e != NULL; e++)
		envc++;
	if (interp && idx == 0)
		return NULL;
	/* what a waiting program can take (launch.h); else cold */
	if (!interp && (len >= AL_SB_GO_BUF || argc + envc + 2 > AL_SB_GO_PTRS))
		return NULL;
	char *buf = malloc(len);
	if (buf == NULL)
		return NULL;
	size_t off = 10;
	off += (size_t)sprintf(buf + off, "%c%c%zu%c", with_stdin ? '1' : '0',
			       '\0', nrl, '\0');
	for (size_t i = 0; i < nrl; i++) {
		/* the loader adds the CPU its start used to cpu_ms; a
		 * waiting program takes the cold run's values */
		unsigned long long v = interp && rl[i].resource == RLIMIT_CPU
					       ? (unsigned long long)lim->cpu_ms
					       : (unsigned long long)rl[i].value;
		off += (size_t)sprintf(buf + off, "%d%c%llu%c",
				       (int)rl[i].resource, '\0', v, '\0');
	}
	if (interp)
		off += (size_t)sprintf(buf + off, "%zu%c", idx, '\0');
	off += (size_t)sprintf(buf + off, "%zu%c", argc, '\0');
	for (char *const *a = s->argv; *a != NULL; a++) {
		size_t n = strlen(*a) + 1;
		memcpy(buf + off, *a, n);
		off += n;
	}
	for (char *const *e = s->envp; *e != NULL; e++) {
		size_t n = strlen(*e) + 1;
		memcpy(buf + off, *e, n);
		off += n;
	}
	char head[11];
	snprintf(head, sizeof(head), "%010zu", off - 10);
	memcpy(buf, head, 10);
	*len_out = off;
	return buf;
}

/* Writes the header with SIGPIPE held off (a dead loader is EPIPE, not a
 * dead host); a SIGPIPE it raised is taken back. */
static int send_header(int fd, const char *buf, size_t len)
{
	sigset_t pipe_set, old;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	int rc = write_all(fd, buf, len);
	if (rc == -EPIPE) {
		struct timespec zero = {0, 0};
		sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static void clear_result_output(al_result *res)
{
	for (int i = 0; i < 2; i++) {
		al_bytes_clear(&res->output[i]);
		al_bytes_set(&res->output[i], "", 0);
		res->output_seen[i] = 0;
		res->truncated[i] = false;
	}
	res->has_exit_code = false;
	res->exit_code = 0;
	res->has_signal = false;
	res->signal = 0;
}

int al_sb_member_run(const al_sb_context *ctx, al_sb_member *m,
		     const al_sb_step *s, const char *script, al_result *res,
		     al_error **err)
{
	(void)ctx;
	bool with_stdin = al_sb_step_stdin(s);
	const al_exec *exec = s->exec;
	al_sb_inbox_fwd *fwd = NULL;
	size_t len = 0;
	char *hdr = build_header(s, script, m->interp, with_stdin, &len);
	if (hdr == NULL) {
		al_sb_member_destroy(m);
		return 1;
	}
	/* the events already delivered are in before the program starts */
	int rc = 0;
	if (m->cls.inbox)
		rc = al_sb_inbox_fwd_start(exec->inbox_dir, exec->inbox_acks_dir,
					   m->inbox_dir, m->acks_fd, &fwd);
	if (rc == 0)
		rc = send_header(m->child.stdin_fd, hdr, len);
	al_explicit_free_str(hdr);
	if (rc < 0) {
		/* nothing of the request ran: no acknowledgement to keep */
		int frc = al_sb_inbox_fwd_stop(fwd);
		(void)frc;
		al_sb_member_destroy(m);
		return 1;
	}
	rc = al_sb_step_supervise(s, &m->child, &m->cg, &m->base, fwd, NULL, res,
				  err);
	/* the program is over: its last acknowledgements, before the
	 * supervisor reads them */
	if (al_sb_inbox_fwd_stop(fwd) < 0 && rc == 0)
		rc = al_error_set(err, AL_ERR_IO, EIO, NULL,
				  "cannot mirror the inbox acknowledgements");
	m->child.pid = -1;
	m->child.signal_ctx = NULL;
	/* a waiting program whose execve failed: as cold reports it */
	const char *why = NULL;
	if (rc == 0 && !m->interp && m->fail_fd >= 0 &&
	    al_sb_go_failed(m->fail_fd, &why) == 1) {
		clear_result_output(res);
		rc = al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE, why);
	}
	if (al_sb_cgrun_destroy(&m->cg) < 0 && rc == 0)
		rc = al_error_set(err, AL_ERR_INTERNAL, EBUSY, NULL,
				  "a run cgroup could not be removed");
	member_free(m);
	return rc;
}

/* ---- destroy ----------------------------------------------------- */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int al_sb_member_destroy(al_sb_member *m)
{
	if (m == NULL)
		return 0;
	int rc = 0;
	if (m->child.pid > 0) {
		if (m->child.signal_tree != NULL &&
		    m->child.signal_tree(m->child.signal_ctx, SIGKILL) < 0)
			rc = -EBUSY;
		while (waitpid(m->child.pid, NULL, __WALL) < 0 &&
		       errno == EINTR)
			;
		al_sb_signal_ctx_free(m->child.signal_ctx);
		close_fd(&m->child.stdin_fd);
		close_fd(&m->child.stdout_fd);
		close_fd(&m->child.stderr_fd);
		close_fd(&m->child.status_fd);
		close_fd(&m->child.pidfd);
	}
	if (al_sb_cgrun_destroy(&m->cg) < 0)
		rc = -EBUSY;
	if (m->rd.root != NULL && al_rundir_remove(&m->rd) < 0)
		rc = -EBUSY;
	al_sb_uid_give(&m->slot);
	member_free(m);
	return rc;
}
