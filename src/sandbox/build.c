/* The build step of a compiled language in the sandbox: its own limits,
 * its own fresh sandbox with /build writable and /code read-only, the
 * build cache around it, and the result's build object; see build.h. */
#include "sandbox/build.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/build_contract.h"
#include "core/util.h"
#include "child/build_cache.h"
#include "child/rundir.h"

int al_sb_build_env(char *const *envp, char *const *extra, char ***out)
{
	size_t n = 0, m = 0;
	char **v;

	while (envp && envp[n])
		n++;
	while (extra && extra[m])
		m++;
	v = calloc(n + m + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	/* the plan's variables win over the run's ones of the same name */
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = strcspn(envp[i], "=");
		bool shadowed = false;

		for (size_t j = 0; j < m && !shadowed; j++)
			shadowed = strcspn(extra[j], "=") == len &&
				   memcmp(extra[j], envp[i], len) == 0;
		if (!shadowed)
			v[k++] = envp[i];
	}
	for (size_t j = 0; j < m; j++)
		v[k++] = extra[j];
	*out = v;
	return 0;
}

/* AIRLOCK_BUILD_LOG=<file>: one line per build step started (not on a
 * cache hit), so tests can count compiler runs. */
static void log_build(const char *language, const char *key)
{
	const char *path = getenv("AIRLOCK_BUILD_LOG");

	if (path == NULL || path[0] != '/')
		return;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	char line[160];
	int n = snprintf(line, sizeof(line), "{\"language\": \"%s\", \"key\": \"%s\"}\n",
			 language, key);
	/* a debugging aid: a failed write has no one to tell */
	ssize_t w = n > 0 ? write(fd, line, (size_t)n) : 0;
	(void)w;
	close(fd);
}

/* Empties a directory without following links. */
static int empty_dir(int dirfd)
{
	/* a descriptor of its own: a dup would share the read offset */
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int rc = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
		    al_remove_tree_at(dirfd, e->d_name) < 0)
			rc = -EIO;
	closedir(d);
	return rc;
}

static int take_output(al_build_result *b, al_result *r)
{
	for (int s = 0; s < 2; s++) {
		b->output[s] = r->output[s];
		r->output[s] = (al_bytes){ 0 };
		if (b->output[s].data == NULL && al_bytes_set(&b->output[s], "", 0) < 0)
			return -ENOMEM;
		b->truncated[s] = r->truncated[s];
	}
	return 0;
}

int al_sb_build(al_sb_step *step, const al_plan *plan, char *const *envp,
		const al_toolchain *tc, const char *sources_digest, al_result *res,
		al_error **err)
{
	const al_exec *exec = step->exec;
	al_limits lim;
	char **benv = NULL;
	char key[65] = "";
	int cache_fd = -1, build_fd = -1, rc;
	int64_t t0 = al_now_ms();
	al_build_result *b = calloc(1, sizeof(*b));
	al_result *br = NULL;

	if (!b)
		return -ENOMEM;
	res->build = b;
	al_request_build_limits(exec->request, &lim);
	if (al_sb_build_env(envp, plan->build_env, &benv) < 0)
		return -ENOMEM;
	uint64_t cache_bytes = exec->build_cache_bytes ? exec->build_cache_bytes
						       : AL_BUILD_CACHE_DEFAULT_BYTES;
	if (exec->build_cache_dir != NULL && sources_digest != NULL &&
	    al_build_cache_key(tc, plan->build_argv, plan->build_env, sources_digest, key) == 0)
		cache_fd = al_build_cache_open(exec->build_cache_dir);
	build_fd = open(step->rd->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (cache_fd >= 0 && build_fd >= 0) {
		uid_t own = step->ctx->privileged ? step->uid : (uid_t)-1;
		int hit = al_build_cache_get(cache_fd, key, build_fd, own, (gid_t)own,
					     cache_bytes);

		if (hit == 1) {
			b->outcome = AL_OUTCOME_COMPLETED;
			b->has_exit_code = true;
			b->exit_code = 0;
			b->cache_hit = true;
			b->wall_ms = (uint64_t)(al_now_ms() - t0);
			if (al_bytes_set(&b->output[0], "", 0) < 0 ||
			    al_bytes_set(&b->output[1], "", 0) < 0)
				rc = -ENOMEM;
			else
				rc = 0;
			goto out;
		}
		/* a partial unpack: build afresh into an empty dir */
		if (hit < 0 && empty_dir(build_fd) < 0) {
			rc = al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
						   "workspace_setup_failed");
			rc = rc < 0 ? rc : 1;
			goto out;
		}
	}

	br = al_result_new();
	if (!br) {
		rc = -ENOMEM;
		goto out;
	}
	log_build(tc->language, key);
	al_sb_step s = *step;
	s.argv = plan->build_argv;
	s.envp = benv;
	s.build = true;
	s.with_stdin = false;
	s.limits = &lim;
	/* the compiler's output is the build object's, not the program's */
	s.on_output = NULL;
	s.on_output_ctx = NULL;
	s.ws_fd = NULL;
	rc = al_sb_run_step(&s, br, err);
	if (rc < 0)
		goto out;
	b->outcome = br->outcome;
	b->has_exit_code = br->has_exit_code;
	b->exit_code = br->exit_code;
	b->has_signal = br->has_signal;
	b->signal = br->signal;
	b->wall_ms = br->usage.wall_ms ? br->usage.wall_ms : (uint64_t)(al_now_ms() - t0);
	if (br->reason && !(b->reason = strdup(br->reason))) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = take_output(b, br)) < 0)
		goto out;
	switch (br->outcome) {
	case AL_OUTCOME_COMPLETED:
		/* uncacheable output (too big, a link) just builds next time */
		if (cache_fd >= 0 && build_fd >= 0)
			(void)al_build_cache_put(cache_fd, key, build_fd, cache_bytes);
		rc = 0;
		break;
	case AL_OUTCOME_FAILED:
	case AL_OUTCOME_KILLED:
	case AL_OUTCOME_TIMED_OUT:
		rc = al_result_set_outcome(res, AL_OUTCOME_FAILED, "build_failed");
		rc = rc < 0 ? rc : 1;
		break;
	default:
		/* cancelled, interrupted, unavailable: the run's outcome */
		rc = al_result_set_outcome(res, br->outcome, br->reason);
		rc = rc < 0 ? rc : 1;
		break;
	}
out:
	if (cache_fd >= 0)
		close(cache_fd);
	if (build_fd >= 0)
		close(build_fd);
	al_result_free(br);
	free(benv);
	return rc;
}
