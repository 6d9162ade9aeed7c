/* cgroups for the sandbox: discovery, per-run create/limit/kill/usage and
 * removal.  See cgroup.h. */
#include "sandbox/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"

static const char *const ctrl_name[AL_CG__N] = {"memory", "pids", "cpu"};
/* The v1 controller that provides each concern (cpu accounting comes from
 * cpuacct on v1). */
static const char *const v1_ctrl[AL_CG__N] = {"memory", "pids", "cpuacct"};

const char *al_sb_cgver_name(al_sb_cgver v)
{
	return v == AL_CG_V2 ? "v2" : v == AL_CG_V1 ? "v1" : "none";
}

/* -errno, never 0: a failed call that left errno unset still fails. */
static int neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

/* A NULL dir is a controller this run has no cgroup for: refused here,
 * never formatted as "(null)" into a path relative to the cwd. */
static int write_str(const char *dir, const char *file, const char *val)
{
	char path[4096];
	if (dir == NULL)
		return -EINVAL;
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return neg_errno();
	size_t len = strlen(val);
	ssize_t w = write(fd, val, len);
	int rc = w == (ssize_t)len ? 0 : (w < 0 ? neg_errno() : -EIO);
	close(fd);
	return rc;
}

/* Reads up to len-1 bytes; buf is always a string, "" on failure. */
static int read_str(const char *dir, const char *file, char *buf, size_t len)
{
	buf[0] = '\0';
	char path[4096];
	if (dir == NULL)
		return -EINVAL;
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return neg_errno();
	ssize_t r = read(fd, buf, len - 1);
	int rc = r < 0 ? neg_errno() : 0;
	close(fd);
	buf[r < 0 ? 0 : r] = '\0';
	return rc;
}

static bool file_exists(const char *dir, const char *file)
{
	char path[4096];
	if (dir == NULL ||
	    snprintf(path, sizeof(path), "%s/%s", dir, file) >=
		    (int)sizeof(path))
		return false;
	return access(path, F_OK) == 0;
}

/* Reads "key value" lines (memory.events, cpu.stat, ...). */
static bool read_key(const char *dir, const char *file, const char *key,
		     uint64_t *out)
{
	char buf[4096];
	if (read_str(dir, file, buf, sizeof(buf)) < 0)
		return false;
	size_t kl = strlen(key);
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (strncmp(line, key, kl) == 0 && line[kl] == ' ') {
			*out = strtoull(line + kl + 1, NULL, 10);
			return true;
		}
		line = nl ? nl + 1 : NULL;
	}
	return false;
}

static bool read_u64(const char *dir, const char *file, uint64_t *out)
{
	char buf[64];
	if (read_str(dir, file, buf, sizeof(buf)) < 0)
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(buf, &end, 10);
	if (errno != 0 || end == buf)
		return false;
	*out = v;
	return true;
}

static bool list_has(const char *list, const char *word, const char *seps)
{
	size_t wl = strlen(word);
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, seps);
		if (n == wl && strncmp(p, word, wl) == 0)
			return true;
		p += n;
		if (*p)
			p++;
	}
	return false;
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
			if (list_has(ctrls, v1_ctrl[i], ",")) {
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

static void read_mounts(al_sb_cgroups *cg, const struct self_cg *s)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (f == NULL)
		return;
	char line[8192];
	while (fgets(line, sizeof(line), f)) {
		char root[4096], mnt[4096], fstype[64], superopts[1024];
		char *dash = strstr(line, " - ");
		if (dash == NULL)
			continue;
		if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2)
			continue;
		if (sscanf(dash + 3, "%63s %*s %1023s", fstype, superopts) != 2)
			continue;
		if (strcmp(fstype, "cgroup2") == 0 && cg->v2_base == NULL &&
		    s->v2_path)
			cg->v2_base = join_mount(mnt, root, s->v2_path);
		if (strcmp(fstype, "cgroup") != 0)
			continue;
		for (int i = 0; i < AL_CG__N; i++)
			if (cg->v1_base[i] == NULL && s->v1_path[i] &&
			    list_has(superopts, v1_ctrl[i], ","))
				cg->v1_base[i] =
					join_mount(mnt, root, s->v1_path[i]);
	}
	fclose(f);
}

static void rmdir_retry(const char *dir)
{
	for (int i = 0; i < 200; i++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return;
		if (errno != EBUSY)
			return;
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
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
	     write_str(dir, limit_file, limit_value) == 0;
	if (has_kill)
		*has_kill = file_exists(dir, "cgroup.kill");
	rmdir_retry(dir);
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
		read_str(cg->v2_base, "cgroup.subtree_control", cg->v2_enabled,
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
	static const char *const v2_limit[AL_CG__N] = {"memory.max", "pids.max",
						       NULL};
	static const char *const v1_limit[AL_CG__N] = {
		"memory.limit_in_bytes", "pids.max", NULL};
	static const char *const limit_value[AL_CG__N] = {"268435456", "64",
							  NULL};
	for (int i = 0; i < AL_CG__N; i++) {
		if (v->v2_ok &&
		    (i == AL_CG_CPU ||
		     list_has(cg->v2_enabled, ctrl_name[i], " \n")) &&
		    try_child(cg->v2_base, v2_limit[i], limit_value[i], NULL)) {
			v->ver[i] = AL_CG_V2;
			continue;
		}
		if (cg->v1_base[i] &&
		    try_child(cg->v1_base[i], v1_limit[i], limit_value[i], NULL))
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
		int rc = neg_errno();
		free(dir);
		return rc;
	}
	*out = dir;
	return 0;
}

static int write_u64(const char *dir, const char *file, uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return write_str(dir, file, buf);
}

/* A run that asked for no memory or pids limit is still bounded: a fork
 * bomb or memory bomb that names no limit must not take the host down.
 * (Explicit limits always win; docs/sandbox.md.) */
#define SANDBOX_DEFAULT_MEMORY_BYTES AL_SB_DEFAULT_MEMORY_BYTES
#define SANDBOX_DEFAULT_PIDS AL_SB_DEFAULT_PIDS

static int set_limits(const al_sb_cgroups *cg, const al_sb_cgrun *run,
		      const al_limits *requested)
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
		if (cg->ver[AL_CG_MEMORY] == AL_CG_V2) {
			rc = write_u64(run->v2_dir, "memory.max",
				       l->memory_bytes);
			if (rc == 0 && file_exists(run->v2_dir, "memory.swap.max"))
				rc = write_str(run->v2_dir, "memory.swap.max",
					       "0");
		} else {
			const char *d = run->v1_dir[AL_CG_MEMORY];
			rc = write_u64(d, "memory.limit_in_bytes",
				       l->memory_bytes);
			if (rc == 0 && file_exists(d, "memory.memsw.limit_in_bytes"))
				rc = write_u64(d, "memory.memsw.limit_in_bytes",
					       l->memory_bytes);
		}
		if (rc < 0)
			return rc;
	}
	if (l->pids > 0)
		rc = write_u64(cg->ver[AL_CG_PIDS] == AL_CG_V2
				       ? run->v2_dir
				       : run->v1_dir[AL_CG_PIDS],
			       "pids.max", l->pids);
	return rc;
}

/* v1 refuses limit_in_bytes above memsw.limit_in_bytes: when raising,
 * memsw goes first; when lowering, the plain limit does. */
static int relimit_v1_memory(const char *d, uint64_t bytes)
{
	bool memsw = file_exists(d, "memory.memsw.limit_in_bytes");
	uint64_t cur = 0;
	bool raising = read_u64(d, "memory.limit_in_bytes", &cur) && bytes > cur;
	int rc = 0;
	if (memsw && raising)
		rc = write_u64(d, "memory.memsw.limit_in_bytes", bytes);
	if (rc == 0)
		rc = write_u64(d, "memory.limit_in_bytes", bytes);
	if (rc == 0 && memsw && !raising)
		rc = write_u64(d, "memory.memsw.limit_in_bytes", bytes);
	return rc;
}

int al_sb_cgrun_relimit(const al_sb_cgroups *cg, const al_sb_cgrun *run,
			const al_limits *requested)
{
	if (cg->ver[AL_CG_MEMORY] != AL_CG_V1)
		return set_limits(cg, run, requested);
	al_limits bounded = *requested;
	if (!(bounded.set & AL_LIMIT_MEMORY_BYTES) && bounded.memory_bytes == 0)
		bounded.memory_bytes = SANDBOX_DEFAULT_MEMORY_BYTES;
	int rc = relimit_v1_memory(run->v1_dir[AL_CG_MEMORY],
				   bounded.memory_bytes);
	/* memory done: "set, 0" keeps set_limits' default off it */
	bounded.memory_bytes = 0;
	bounded.set |= AL_LIMIT_MEMORY_BYTES;
	return rc < 0 ? rc : set_limits(cg, run, &bounded);
}

int al_sb_cgrun_limit_sockets(const al_sb_cgroups *cg, const al_sb_cgrun *run,
			      uint64_t bytes)
{
	if (!cg->v1_socket || run->v1_dir[AL_CG_MEMORY] == NULL || bytes == 0)
		return 0;
	return write_u64(run->v1_dir[AL_CG_MEMORY],
			 "memory.kmem.tcp.limit_in_bytes", bytes);
}

int al_sb_cgrun_create(const al_sb_cgroups *cg, const char *name,
		       const al_limits *limits, al_sb_cgrun *run,
		       al_error **err)
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
				rc = neg_errno();
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
	if (rc == 0)
		rc = set_limits(cg, run, limits);
	if (rc < 0) {
		al_sb_cgrun_destroy(run);
		return al_error_set(err, AL_ERR_UNAVAILABLE, -rc,
				    "sandbox_unavailable",
				    "creating the run's cgroups failed");
	}
	return 0;
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
		char path[4096];
		if (snprintf(path, sizeof(path), "%s/tasks", run->v1_dir[i]) >=
		    (int)sizeof(path)) {
			al_sb_cgrun_close_tasks(fds);
			return -ENAMETOOLONG;
		}
		fds[i] = open(path, O_WRONLY | O_CLOEXEC);
		if (fds[i] < 0) {
			int rc = neg_errno();
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
			return neg_errno();
	return 0;
}

int al_sb_cgrun_attach_v2(const al_sb_cgrun *run, pid_t pid)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	return run->v2_dir ? write_str(run->v2_dir, "cgroup.procs", buf) : 0;
}

/* Sends SIGKILL to every pid listed in dir/cgroup.procs; returns how many
 * were listed. */
static int kill_listed(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return 0;
	int n = 0, pid;
	while (fscanf(f, "%d", &pid) == 1) {
		if (pid > 0)
			kill(pid, SIGKILL);
		n++;
	}
	fclose(f);
	return n;
}

void al_sb_cgrun_kill(const al_sb_cgrun *run)
{
	if (run->v2_dir && write_str(run->v2_dir, "cgroup.kill", "1") == 0)
		return;
	/* No cgroup.kill: the pid namespace dies with its init; this is the
	 * backstop for anything listed in our cgroups. */
	if (run->v2_dir)
		kill_listed(run->v2_dir);
	for (int i = 0; i < AL_CG__N; i++)
		if (run->v1_dir[i])
			kill_listed(run->v1_dir[i]);
}

/* Empty only when the kernel says so (or the cgroup is gone): a read that
 * fails for another reason must not let a caller believe the run ended. */
static bool dir_empty(const char *dir)
{
	char buf[64];
	int rc = read_str(dir, "cgroup.procs", buf, sizeof(buf));
	if (rc < 0)
		return rc == -ENOENT;
	return buf[0] == '\0';
}

bool al_sb_cgrun_empty(const al_sb_cgrun *run)
{
	if (run->v2_dir && !dir_empty(run->v2_dir))
		return false;
	for (int i = 0; i < AL_CG__N; i++)
		if (run->v1_dir[i] && !dir_empty(run->v1_dir[i]))
			return false;
	return true;
}

void al_sb_cgrun_usage(const al_sb_cgrun *run, al_sb_cgusage *u)
{
	memset(u, 0, sizeof(*u));
	uint64_t v;
	if (run->v2_dir) {
		if (read_key(run->v2_dir, "cpu.stat", "user_usec",
			     &u->cpu_user_us) &&
		    read_key(run->v2_dir, "cpu.stat", "system_usec",
			     &u->cpu_sys_us))
			u->have_cpu = true;
		if (read_u64(run->v2_dir, "memory.peak", &v)) {
			u->have_peak = true;
			u->peak_memory_bytes = v;
		}
		if (read_key(run->v2_dir, "memory.events", "oom_kill", &v) &&
		    v > 0)
			u->oom_killed = true;
		if (read_key(run->v2_dir, "pids.events", "max", &v) && v > 0)
			u->pids_max_hit = true;
	}
	const char *mem = run->v1_dir[AL_CG_MEMORY];
	if (mem) {
		if (read_u64(mem, "memory.max_usage_in_bytes", &v)) {
			u->have_peak = true;
			u->peak_memory_bytes = v;
		}
		if (read_key(mem, "memory.oom_control", "oom_kill", &v) &&
		    v > 0)
			u->oom_killed = true;
	}
	const char *pids = run->v1_dir[AL_CG_PIDS];
	if (pids && read_key(pids, "pids.events", "max", &v) && v > 0)
		u->pids_max_hit = true;
	const char *cpu = run->v1_dir[AL_CG_CPU];
	if (!u->have_cpu && cpu) {
		uint64_t us, sy;
		if (read_u64(cpu, "cpuacct.usage_user", &us) &&
		    read_u64(cpu, "cpuacct.usage_sys", &sy)) {
			u->have_cpu = true;
			u->cpu_user_us = us / 1000;
			u->cpu_sys_us = sy / 1000;
		}
	}
}

int al_sb_cgrun_destroy(al_sb_cgrun *run)
{
	int rc = 0;
	if (run->v2_fd >= 0)
		close(run->v2_fd);
	run->v2_fd = -1;
	for (int i = AL_CG__N - 1; i >= 0; i--) {
		if (run->v1_dir[i] == NULL)
			continue;
		bool shared = false;
		for (int j = 0; j < i; j++)
			if (run->v1_dir[j] &&
			    strcmp(run->v1_dir[j], run->v1_dir[i]) == 0)
				shared = true;
		if (!shared) {
			rmdir_retry(run->v1_dir[i]);
			if (access(run->v1_dir[i], F_OK) == 0)
				rc = -EBUSY;
		}
		free(run->v1_dir[i]);
		run->v1_dir[i] = NULL;
	}
	if (run->v2_dir) {
		rmdir_retry(run->v2_dir);
		if (access(run->v2_dir, F_OK) == 0)
			rc = -EBUSY;
		free(run->v2_dir);
		run->v2_dir = NULL;
	}
	return rc;
}
