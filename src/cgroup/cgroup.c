/* cgroups: discovery, and a run's cgroups created, limited, killed,
 * measured and removed through the manager of each controller's version
 * (cgroup.h, manager.h). */
#include "cgroup/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgfs.h"
#include "cgroup/manager.h"
#include "cgroup/mount_table.h"
#include "cgroup/sweep.h"
#include "core/util.h"

static const char *const ctrl_name[AL_CG__N] = {"memory", "pids", "cpu"};
/* The v1 controller that provides each concern (cpu accounting comes from
 * cpuacct on v1). */
static const char *const v1_ctrl[AL_CG__N] = {"memory", "pids", "cpuacct"};

const char *al_sb_cgver_name(al_sb_cgver v)
{
	return v == AL_CG_V2 ? "v2" : v == AL_CG_V1 ? "v1" : "none";
}

/* Our path in each hierarchy, from /proc/self/cgroup. */
struct self_cg {
	char *v2_path;
	char *v1_path[AL_CG__N];
};

static void read_self_cgroup(struct self_cg *s)
{
	memset(s, 0, sizeof(*s));
	FILE *f = fopen("/proc/self/cgroup", "re");
	if (f == NULL)
		return;
	char line[4096];
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2 == NULL)
			continue;
		*c1 = '\0';
		*c2 = '\0';
		const char *ctrls = c1 + 1, *path = c2 + 1;
		if (strcmp(line, "0") == 0 && *ctrls == '\0') {
			free(s->v2_path);
			s->v2_path = strdup(path);
			continue;
		}
		for (int i = 0; i < AL_CG__N; i++)
			if (al_cgfs_list_has(ctrls, v1_ctrl[i], ",")) {
				free(s->v1_path[i]);
				s->v1_path[i] = strdup(path);
			}
	}
	fclose(f);
}

/* Joins a mount point, the mount's root and our path in it. */
static char *join_mount(const char *mnt, const char *root, const char *path)
{
	size_t rl = strlen(root);
	if (strcmp(root, "/") == 0)
		rl = 0;
	else if (strncmp(path, root, rl) != 0)
		return NULL; /* our cgroup is outside this mount */
	const char *rest = path + rl;
	if (strcmp(rest, "/") == 0)
		rest = "";
	return al_strdup_printf("%s%s", mnt, rest);
}

struct locate {
	al_sb_cgroups *cg;
	const struct self_cg *s;
};

static void locate_in(const al_cg_mount *m, void *ctx)
{
	struct locate *l = ctx;
	al_sb_cgroups *cg = l->cg;
	if (m->v2) {
		if (cg->v2_base == NULL && l->s->v2_path)
			cg->v2_base = join_mount(m->mnt, m->root, l->s->v2_path);
		return;
	}
	for (int i = 0; i < AL_CG__N; i++)
		if (cg->v1_base[i] == NULL && l->s->v1_path[i] &&
		    al_cgfs_list_has(m->superopts, v1_ctrl[i], ","))
			cg->v1_base[i] =
				join_mount(m->mnt, m->root, l->s->v1_path[i]);
}

static void read_mounts(al_sb_cgroups *cg, const struct self_cg *s)
{
	struct locate l = {.cg = cg, .s = s};
	al_cg_mounts_each(locate_in, &l);
}

/* Can a child of base be created and (for limit files) limited? */
static bool try_child(const char *base, const char *limit_file,
		      const char *limit_value, bool *has_kill)
{
	/* unique per trial: two threads may probe at once */
	static atomic_uint seq;
	char *dir = al_strdup_printf("%s/airlock-probe-%d-%u", base,
				     (int)getpid(), atomic_fetch_add(&seq, 1));
	if (dir == NULL)
		return false;
	bool ok = false;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		goto out;
	ok = limit_file == NULL ||
	     al_cgfs_write(dir, limit_file, limit_value) == 0;
	if (has_kill)
		*has_kill = al_cgfs_exists(dir, "cgroup.kill");
	al_cgfs_rmdir_retry(dir);
out:
	free(dir);
	return ok;
}

void al_sb_cgroups_locate(al_sb_cgroups *cg)
{
	memset(cg, 0, sizeof(*cg));
	struct self_cg s;
	read_self_cgroup(&s);
	read_mounts(cg, &s);
	if (cg->v2_base)
		al_cgfs_read(cg->v2_base, "cgroup.subtree_control", cg->v2_enabled,
			 sizeof(cg->v2_enabled));
	free(s.v2_path);
	for (int i = 0; i < AL_CG__N; i++)
		free(s.v1_path[i]);
}

void al_sb_cgroups_trial(al_sb_cgroups *cg, al_sb_cgverdict *v)
{
	memset(v, 0, sizeof(*v));
	if (cg->v2_base)
		v->v2_ok = try_child(cg->v2_base, NULL, NULL, &v->v2_kill);
	static const char *const limit_value[AL_CG__N] = {"268435456", "64",
							  NULL};
	for (int i = 0; i < AL_CG__N; i++) {
		if (v->v2_ok &&
		    (i == AL_CG_CPU ||
		     al_cgfs_list_has(cg->v2_enabled, ctrl_name[i], " \n")) &&
		    try_child(cg->v2_base, al_cg_v2.trial_file[i], limit_value[i],
			      NULL)) {
			v->ver[i] = AL_CG_V2;
			continue;
		}
		if (cg->v1_base[i] &&
		    try_child(cg->v1_base[i], al_cg_v1.trial_file[i],
			      limit_value[i], NULL))
			v->ver[i] = AL_CG_V1;
	}
	if (v->ver[AL_CG_MEMORY] == AL_CG_V1)
		v->v1_socket = try_child(cg->v1_base[AL_CG_MEMORY],
					 "memory.kmem.tcp.limit_in_bytes",
					 "67108864", NULL);
	al_sb_cgroups_apply(cg, v);
}

void al_sb_cgroups_apply(al_sb_cgroups *cg, const al_sb_cgverdict *v)
{
	if (!v->v2_ok) {
		free(cg->v2_base);
		cg->v2_base = NULL;
	}
	cg->v2_kill = cg->v2_base != NULL && v->v2_kill;
	for (int i = 0; i < AL_CG__N; i++) {
		al_sb_cgver ver = v->ver[i];
		/* a verdict never names a hierarchy that was not located */
		if ((ver == AL_CG_V2 && cg->v2_base == NULL) ||
		    (ver == AL_CG_V1 && cg->v1_base[i] == NULL))
			ver = AL_CG_NONE;
		cg->ver[i] = ver;
	}
	cg->v1_socket = cg->ver[AL_CG_MEMORY] == AL_CG_V1 && v->v1_socket;
}

void al_sb_cgroups_clear(al_sb_cgroups *cg)
{
	free(cg->v2_base);
	for (int i = 0; i < AL_CG__N; i++)
		free(cg->v1_base[i]);
	memset(cg, 0, sizeof(*cg));
}

/* Creates base/name; *out is set only on success. */
static int make_dir(const char *base, const char *name, char **out)
{
	char *dir = al_strdup_printf("%s/%s", base, name);
	if (dir == NULL)
		return -ENOMEM;
	if (mkdir(dir, 0755) < 0) {
		int rc = al_cgfs_neg_errno();
		free(dir);
		return rc;
	}
	*out = dir;
	return 0;
}

/* A run that asked for no memory or pids limit is still bounded: a fork
 * bomb or memory bomb that names no limit must not take the host down.
 * (Explicit limits always win; docs/sandbox.md.) */
#define SANDBOX_DEFAULT_MEMORY_BYTES AL_SB_DEFAULT_MEMORY_BYTES
#define SANDBOX_DEFAULT_PIDS AL_SB_DEFAULT_PIDS

/* The manager of a controller found usable (never AL_CG_NONE here: a
 * limit on a controller without a cgroup is zeroed or refused first). */
static const al_cg_manager *manager(al_sb_cgver v)
{
	return v == AL_CG_V2 ? &al_cg_v2 : &al_cg_v1;
}

/* The run's cgroup that holds a controller's files. */
static const char *dir_of(const al_sb_cgroups *cg, const al_sb_cgrun *run,
			  enum al_sb_ctrl c)
{
	return cg->ver[c] == AL_CG_V2 ? run->v2_dir : run->v1_dir[c];
}

/* relimit: the cgroups hold processes already (a warm member taking its
 * request's limits). */
static int set_limits(const al_sb_cgroups *cg, const al_sb_cgrun *run,
		      const al_limits *requested, bool relimit)
{
	int rc = 0;
	al_limits bounded = *requested;
	const al_limits *l = &bounded;
	if (!(bounded.set & AL_LIMIT_MEMORY_BYTES) && bounded.memory_bytes == 0)
		bounded.memory_bytes = SANDBOX_DEFAULT_MEMORY_BYTES;
	if (!(bounded.set & AL_LIMIT_PIDS) && bounded.pids == 0)
		bounded.pids = SANDBOX_DEFAULT_PIDS;
	/* A controller without a cgroup (none was delegated, e.g. when
	 * unprivileged): the facts do not list its limit, so an explicit one
	 * was refused unenforceable_limit before this, and failing here is
	 * the backstop; a default (ours or a tenant ceiling's) binds nothing
	 * there, which the doctor reports. */
	const struct {
		enum al_sb_ctrl ctrl;
		unsigned bit;
		uint64_t *val;
	} bound[] = {
		{AL_CG_MEMORY, AL_LIMIT_MEMORY_BYTES, &bounded.memory_bytes},
		{AL_CG_PIDS, AL_LIMIT_PIDS, &bounded.pids},
	};
	for (size_t i = 0; i < sizeof(bound) / sizeof(bound[0]); i++) {
		if (cg->ver[bound[i].ctrl] != AL_CG_NONE)
			continue;
		if ((requested->set & bound[i].bit) && *bound[i].val > 0)
			return -EOPNOTSUPP;
		*bound[i].val = 0;
	}
	if (l->memory_bytes > 0) {
		const al_cg_manager *m = manager(cg->ver[AL_CG_MEMORY]);
		const char *d = dir_of(cg, run, AL_CG_MEMORY);
		rc = relimit ? m->relimit_memory(d, l->memory_bytes)
			     : m->limit_memory(d, l->memory_bytes);
		if (rc < 0)
			return rc;
	}
	if (l->pids > 0)
		rc = manager(cg->ver[AL_CG_PIDS])
			     ->limit_pids(dir_of(cg, run, AL_CG_PIDS), l->pids);
	return rc;
}

int al_sb_cgrun_relimit(const al_sb_cgroups *cg, const al_sb_cgrun *run,
			const al_limits *requested)
{
	return set_limits(cg, run, requested, true);
}

int al_sb_cgrun_limit_sockets(const al_sb_cgroups *cg, const al_sb_cgrun *run,
			      uint64_t bytes)
{
	if (!cg->v1_socket || run->v1_dir[AL_CG_MEMORY] == NULL || bytes == 0)
		return 0;
	return al_cgfs_write_u64(run->v1_dir[AL_CG_MEMORY],
				 "memory.kmem.tcp.limit_in_bytes", bytes);
}

void al_sb_cgrun_name(char *buf, size_t size, const char *tag)
{
	uint32_t r = 0;
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec;
	}
	snprintf(buf, size, "airlock-%d-%08x-%s", (int)getpid(), r, tag);
}

/* A run's cgroups once made (rc 0), or removed again when a step of
 * making them failed: never a partial set. */
static int made_or_removed(al_sb_cgrun *run, int rc, al_error **err)
{
	if (rc == 0)
		return 0;
	al_sb_cgrun_destroy(run);
	return al_error_set(err, AL_ERR_UNAVAILABLE, -rc, "sandbox_unavailable",
			    "creating the run's cgroups failed");
}

int al_sb_cgrun_make(const al_sb_cgroups *cg, const char *name,
		     al_sb_cgrun *run, al_error **err)
{
	memset(run, 0, sizeof(*run));
	run->v2_fd = -1;
	int rc = 0;
	if (cg->v2_base) {
		rc = make_dir(cg->v2_base, name, &run->v2_dir);
		if (rc == 0) {
			run->v2_fd = open(run->v2_dir,
					  O_DIRECTORY | O_RDONLY | O_CLOEXEC);
			if (run->v2_fd < 0)
				rc = al_cgfs_neg_errno();
		}
	}
	for (int i = 0; rc == 0 && i < AL_CG__N; i++) {
		if (cg->ver[i] != AL_CG_V1)
			continue;
		bool dup = false; /* controllers co-mounted in one hierarchy */
		for (int j = 0; j < i; j++)
			if (run->v1_dir[j] && cg->v1_base[j] &&
			    strcmp(cg->v1_base[j], cg->v1_base[i]) == 0) {
				run->v1_dir[i] = strdup(run->v1_dir[j]);
				dup = true;
				if (run->v1_dir[i] == NULL)
					rc = -ENOMEM;
			}
		if (!dup)
			rc = make_dir(cg->v1_base[i], name, &run->v1_dir[i]);
	}
	return made_or_removed(run, rc, err);
}

int al_sb_cgrun_limit(const al_sb_cgroups *cg, const al_sb_cgrun *run,
		      const al_limits *limits)
{
	return set_limits(cg, run, limits, false);
}

int al_sb_cgrun_create(const al_sb_cgroups *cg, const char *name,
		       const al_limits *limits, al_sb_cgrun *run,
		       al_error **err)
{
	int rc = al_sb_cgrun_make(cg, name, run, err);
	if (rc < 0)
		return rc;
	return made_or_removed(run, al_sb_cgrun_limit(cg, run, limits), err);
}

int al_sb_cgrun_open_tasks(const al_sb_cgrun *run, int fds[AL_CG__N])
{
	int n = 0;
	for (int i = 0; i < AL_CG__N; i++)
		fds[i] = -1;
	for (int i = 0; i < AL_CG__N; i++) {
		if (run->v1_dir[i] == NULL)
			continue;
		bool dup = false; /* co-mounted controllers share one dir */
		for (int j = 0; j < i; j++)
			if (run->v1_dir[j] &&
			    strcmp(run->v1_dir[j], run->v1_dir[i]) == 0)
				dup = true;
		if (dup)
			continue;
		/* kept open with a set made ahead: a copy, not a path walk */
		int kept = al_cg_kept_fd(run, run->v1_dir[i], "tasks");
		if (kept >= 0) {
			fds[i] = fcntl(kept, F_DUPFD_CLOEXEC, 3);
			if (fds[i] < 0) {
				int rc = al_cgfs_neg_errno();
				al_sb_cgrun_close_tasks(fds);
				return rc;
			}
			n++;
			continue;
		}
		char path[4096];
		if (snprintf(path, sizeof(path), "%s/tasks", run->v1_dir[i]) >=
		    (int)sizeof(path)) {
			al_sb_cgrun_close_tasks(fds);
			return -ENAMETOOLONG;
		}
		fds[i] = open(path, O_WRONLY | O_CLOEXEC);
		if (fds[i] < 0) {
			int rc = al_cgfs_neg_errno();
			al_sb_cgrun_close_tasks(fds);
			return rc;
		}
		n++;
	}
	return n;
}

void al_sb_cgrun_close_tasks(int fds[AL_CG__N])
{
	for (int i = 0; i < AL_CG__N; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

int al_sb_cgrun_join_self(const int fds[AL_CG__N])
{
	for (int i = 0; i < AL_CG__N; i++)
		if (fds[i] >= 0 && write(fds[i], "0", 1) != 1)
			return al_cgfs_neg_errno();
	return 0;
}

int al_sb_cgrun_attach_v2(const al_sb_cgrun *run, pid_t pid)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	return run->v2_dir ? al_cgfs_write(run->v2_dir, "cgroup.procs", buf) : 0;
}

void al_sb_cgrun_kill(const al_sb_cgrun *run)
{
	if (run->v2_dir && al_cgfs_write(run->v2_dir, "cgroup.kill", "1") == 0)
		return;
	/* No cgroup.kill: the pid namespace dies with its init; this is the
	 * backstop for anything listed in our cgroups. */
	if (run->v2_dir)
		al_cgfs_kill_listed(run->v2_dir);
	for (int i = 0; i < AL_CG__N; i++)
		if (run->v1_dir[i])
			al_cgfs_kill_listed(run->v1_dir[i]);
}

/* Empty only when the kernel says so (or the cgroup is gone): a read that
 * fails for another reason must not let a caller believe the run ended. */

/* Empty, or holding `but` alone (pid > 0). */
static bool dir_empty_but(const al_sb_cgrun *run, const char *dir, pid_t but)
{
	char buf[64], only[24];
	int rc = al_cg_read(run, dir, "cgroup.procs", buf, sizeof(buf));
	if (rc < 0)
		return rc == -ENOENT;
	if (buf[0] == '\0')
		return true;
	if (but <= 0)
		return false;
	snprintf(only, sizeof(only), "%d\n", (int)but);
	return strcmp(buf, only) == 0;
}

bool al_sb_cgrun_empty_but(const al_sb_cgrun *run, pid_t pid)
{
	if (run->v2_dir && !dir_empty_but(run, run->v2_dir, pid))
		return false;
	for (int i = 0; i < AL_CG__N; i++)
		if (run->v1_dir[i] &&
		    !dir_empty_but(run, run->v1_dir[i], pid))
			return false;
	return true;
}

bool al_sb_cgrun_run_gone_but(const al_sb_cgrun *run, pid_t pid)
{
	if (run->v2_dir != NULL)
		return dir_empty_but(run, run->v2_dir, pid);
	return al_sb_cgrun_empty_but(run, pid);
}

bool al_sb_cgrun_empty(const al_sb_cgrun *run)
{
	return al_sb_cgrun_empty_but(run, 0);
}

void al_sb_cgrun_usage(const al_sb_cgrun *run, al_sb_cgusage *u)
{
	memset(u, 0, sizeof(*u));
	al_cg_v2.usage(run, u);
	al_cg_v1.usage(run, u);
}

/* Removes dir now, or after the run's cgroups were verifiably emptied
 * (*settled: done once per destroy); false when it stayed. */
static bool remove_run_dir(al_sb_cgrun *run, const char *dir, bool *settled)
{
	if (rmdir(dir) == 0 || errno == ENOENT)
		return true;
	if (errno != EBUSY)
		return false;
	if (!*settled) {
		al_sb_cgrun_settle(run, AL_CG_SETTLE_MS);
		*settled = true;
	}
	return al_cgfs_rmdir_retry(dir) == 0;
}

int al_sb_cgrun_destroy(al_sb_cgrun *run)
{
	int rc = 0;
	bool settled = false;
	bool made = run->v2_dir != NULL;
	al_cg_reads_drop(run);
	if (run->v2_fd >= 0)
		close(run->v2_fd);
	run->v2_fd = -1;
	for (int i = AL_CG__N - 1; i >= 0; i--) {
		if (run->v1_dir[i] == NULL)
			continue;
		made = true;
		bool shared = false;
		for (int j = 0; j < i; j++)
			if (run->v1_dir[j] &&
			    strcmp(run->v1_dir[j], run->v1_dir[i]) == 0)
				shared = true;
		if (!shared && !remove_run_dir(run, run->v1_dir[i], &settled)) {
			al_cg_sweep_defer(run->v1_dir[i]);
			rc = -EBUSY;
		}
	}
	if (run->v2_dir && !remove_run_dir(run, run->v2_dir, &settled)) {
		al_cg_sweep_defer(run->v2_dir);
		rc = -EBUSY;
	}
	if (made)
		al_cg_sweep_after(run);
	for (int i = 0; i < AL_CG__N; i++) {
		free(run->v1_dir[i]);
		run->v1_dir[i] = NULL;
	}
	free(run->v2_dir);
	run->v2_dir = NULL;
	return rc;
}
