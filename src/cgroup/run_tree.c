/* A durable run's cgroup tree in the unified hierarchy (see cgroup.h,
 * al_run_cgroup_*). */
#include "cgroup/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgfs.h"
#include "core/util.h"

int al_run_cgroup_base(char **out)
{
	const char *mnt = al_cgfs_unified_mount();
	char line[4096];
	char *path = NULL;
	FILE *f;

	*out = NULL;
	if (mnt == NULL || (f = fopen("/proc/self/cgroup", "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			free(path);
			path = strdup(line + 3);
		}
	}
	fclose(f);
	if (path == NULL)
		return 0;
	char *base = strcmp(path, "/") == 0
			     ? strdup(mnt)
			     : al_strdup_printf("%s%s", mnt, path);
	free(path);
	if (base == NULL)
		return -ENOMEM;
	/* Usable when we may create (and remove) a child here. */
	char *probe = al_strdup_printf("%s/airlock-run-probe-%d", base,
				       (int)getpid());
	bool ok = probe != NULL && mkdir(probe, 0755) == 0;
	if (ok)
		rmdir(probe);
	free(probe);
	if (!ok) {
		free(base);
		return 0;
	}
	*out = base;
	return 0;
}

static int create_named(const char *base, const char *name, const char *tag,
			char **dir)
{
	char *d = al_strdup_printf("%s/airlock-run-%s.%s", base, name, tag);
	*dir = NULL;
	if (d == NULL)
		return -ENOMEM;
	/* Only a cgroup made here and now.  Another daemon on this machine
	 * may run under the same id (a remote caller chooses it): the tag
	 * (from our state directory) keeps their names apart, and a run must
	 * never share, or later kill, someone else's tree. */
	if (mkdir(d, 0755) < 0) {
		int e = errno;
		free(d);
		return -e;
	}
	*dir = d;
	return 0;
}

int al_run_cgroup_create(const char *base, const char *run_id, const char *tag,
		    char **dir)
{
	return create_named(base, run_id, tag, dir);
}

#define IDLE_PREFIX "sup-"

int al_run_cgroup_create_idle(const char *base, const char *nonce, const char *tag,
			 char **dir)
{
	char name[64];
	snprintf(name, sizeof(name), IDLE_PREFIX "%s", nonce);
	return create_named(base, name, tag, dir);
}

/* true when the last component of dir is "airlock-run-<name>.<tag>". */
static bool named(const char *dir, const char *name)
{
	char want[96];
	int n = snprintf(want, sizeof(want), "/airlock-run-%s.", name);
	const char *slash = strrchr(dir, '/');
	if (slash == NULL || n <= 0 || n >= (int)sizeof(want) ||
	    strncmp(slash, want, (size_t)n) != 0)
		return false;
	const char *tag = slash + n;
	return strlen(tag) == AL_RUN_CGROUP_TAG_LEN &&
	       strspn(tag, "0123456789abcdef") == AL_RUN_CGROUP_TAG_LEN;
}

bool al_run_cgroup_valid(const char *dir, const char *run_id, const char *nonce)
{
	const char *mnt = al_cgfs_unified_mount();
	char idle[64];
	if (dir == NULL || mnt == NULL || strstr(dir, "/..") != NULL ||
	    strstr(dir, "//") != NULL)
		return false;
	size_t ml = strlen(mnt);
	if (strncmp(dir, mnt, ml) != 0 || dir[ml] != '/')
		return false;
	snprintf(idle, sizeof(idle), IDLE_PREFIX "%s", nonce != NULL ? nonce : "");
	return named(dir, run_id) || (nonce != NULL && named(dir, idle));
}

int al_run_cgroup_populated(const char *dir)
{
	char buf[512];
	int rc = al_cgfs_read(dir, "cgroup.events", buf, sizeof(buf));
	if (rc == -ENOENT)
		return 0;
	if (rc < 0)
		return rc;
	const char *p = strstr(buf, "populated ");
	if (p == NULL)
		return -EIO;
	return p[10] == '1' ? 1 : 0;
}

int al_run_cgroup_kill_wait(const char *dir, int timeout_ms)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/cgroup.kill", dir) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	for (int waited = 0;; waited += 5) {
		int pop = al_run_cgroup_populated(dir);
		if (pop == 0)
			return 0;
		if (waited >= timeout_ms)
			return -ETIMEDOUT;
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		bool killed = fd >= 0 && write(fd, "1", 1) == 1;
		if (fd >= 0)
			close(fd);
		if (!killed)
			al_cgfs_kill_listed(dir);
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

static int remove_tree(const char *dir, int depth)
{
	char path[PATH_MAX];
	if (depth > 16)
		return -ELOOP;
	DIR *d = opendir(dir);
	if (d == NULL)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) <
		    (int)sizeof(path))
			remove_tree(path, depth + 1);
	}
	closedir(d);
	return al_cgfs_rmdir_retry(dir);
}

int al_run_cgroup_remove(const char *dir)
{
	return remove_tree(dir, 0);
}

int al_run_cgroup_leave_idle(void)
{
	char *path = al_cgfs_self_unified();
	int rc = -ENOENT;
	const char *slash = path != NULL ? strrchr(path, '/') : NULL;
	/* Only our own idle cgroup: never the daemon's or a run's. */
	if (slash == NULL || slash == path ||
	    strncmp(slash, "/airlock-run-" IDLE_PREFIX,
		    strlen("/airlock-run-" IDLE_PREFIX)) != 0)
		goto out;
	char parent[PATH_MAX];
	if (snprintf(parent, sizeof(parent), "%.*s/cgroup.procs",
		     (int)(slash - path), path) >= (int)sizeof(parent)) {
		rc = -ENAMETOOLONG;
		goto out;
	}
	int fd = open(parent, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	rc = write(fd, "0", 1) == 1 ? 0 : -errno;
	close(fd);
	if (rc == 0 && (rc = al_run_cgroup_kill_wait(path, 5000)) == 0)
		rc = al_run_cgroup_remove(path);
out:
	free(path);
	return rc;
}
