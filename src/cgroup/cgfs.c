/* Reading and writing cgroup files (see cgfs.h). */
#include "cgroup/cgfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* How long a removal waits for the kernel to let a cgroup's last tasks
 * go (it does so asynchronously after they exit): 200 tries 5 ms apart,
 * a second, far more than it takes. */
#define RMDIR_TRIES 200
#define RMDIR_PAUSE_NS (5 * 1000 * 1000)
/* Bound on the nesting followed when killing a subtree. */
#define KILL_DEPTH_MAX 16

int al_cgfs_neg_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

static int path_of(char path[PATH_MAX], const char *dir, const char *file)
{
	if (dir == NULL)
		return -EINVAL;
	if (snprintf(path, PATH_MAX, "%s/%s", dir, file) >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int al_cgfs_write(const char *dir, const char *file, const char *val)
{
	char path[PATH_MAX];
	int rc = path_of(path, dir, file);
	if (rc < 0)
		return rc;
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return al_cgfs_neg_errno();
	size_t len = strlen(val);
	ssize_t w = write(fd, val, len);
	rc = w == (ssize_t)len ? 0 : (w < 0 ? al_cgfs_neg_errno() : -EIO);
	close(fd);
	return rc;
}

int al_cgfs_write_u64(const char *dir, const char *file, uint64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return al_cgfs_write(dir, file, buf);
}

int al_cgfs_read(const char *dir, const char *file, char *buf, size_t len)
{
	char path[PATH_MAX];
	buf[0] = '\0';
	int rc = path_of(path, dir, file);
	if (rc < 0)
		return rc;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return al_cgfs_neg_errno();
	ssize_t r = read(fd, buf, len - 1);
	rc = r < 0 ? al_cgfs_neg_errno() : 0;
	close(fd);
	buf[r < 0 ? 0 : r] = '\0';
	return rc;
}

bool al_cgfs_exists(const char *dir, const char *file)
{
	char path[PATH_MAX];
	return path_of(path, dir, file) == 0 && access(path, F_OK) == 0;
}

bool al_cgfs_find_key(const char *buf, const char *key, uint64_t *out)
{
	size_t kl = strlen(key);
	for (const char *line = buf; line && *line;) {
		const char *nl = strchr(line, '\n');
		if (strncmp(line, key, kl) == 0 && line[kl] == ' ') {
			*out = strtoull(line + kl + 1, NULL, 10);
			return true;
		}
		line = nl ? nl + 1 : NULL;
	}
	return false;
}

bool al_cgfs_read_key(const char *dir, const char *file, const char *key,
		      uint64_t *out)
{
	char buf[4096];
	if (al_cgfs_read(dir, file, buf, sizeof(buf)) < 0)
		return false;
	return al_cgfs_find_key(buf, key, out);
}

bool al_cgfs_parse_u64(const char *buf, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(buf, &end, 10);
	if (errno != 0 || end == buf)
		return false;
	*out = v;
	return true;
}

bool al_cgfs_read_u64(const char *dir, const char *file, uint64_t *out)
{
	char buf[64];
	if (al_cgfs_read(dir, file, buf, sizeof(buf)) < 0)
		return false;
	return al_cgfs_parse_u64(buf, out);
}

bool al_cgfs_list_has(const char *list, const char *word, const char *seps)
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

int al_cgfs_rmdir_retry(const char *dir)
{
	for (int i = 0; i < RMDIR_TRIES; i++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		struct timespec ts = {0, RMDIR_PAUSE_NS};
		nanosleep(&ts, NULL);
	}
	return -EBUSY;
}

static void kill_listed(const char *dir, int depth)
{
	char path[PATH_MAX];
	if (depth > KILL_DEPTH_MAX || path_of(path, dir, "cgroup.procs") < 0)
		return;
	FILE *f = fopen(path, "re");
	if (f != NULL) {
		long pid;
		while (fscanf(f, "%ld", &pid) == 1)
			if (pid > 0)
				kill((pid_t)pid, SIGKILL);
		fclose(f);
	}
	DIR *d = opendir(dir);
	if (d == NULL)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (path_of(path, dir, de->d_name) == 0)
			kill_listed(path, depth + 1);
	}
	closedir(d);
}

void al_cgfs_kill_listed(const char *dir)
{
	kill_listed(dir, 0);
}

const char *al_cgfs_unified_mount(void)
{
	static const char *const cands[] = {"/sys/fs/cgroup/unified",
					    "/sys/fs/cgroup"};
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
		struct statfs sf;
		if (statfs(cands[i], &sf) == 0 &&
		    (unsigned long)sf.f_type == (unsigned long)CGROUP2_SUPER_MAGIC)
			return cands[i];
	}
	return NULL;
}

char *al_cgfs_self_unified(void)
{
	const char *mnt = al_cgfs_unified_mount();
	char line[4096];
	char *path = NULL;
	FILE *f = mnt != NULL ? fopen("/proc/self/cgroup", "re") : NULL;
	if (f == NULL)
		return NULL;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			free(path);
			path = al_strdup_printf("%s%s", mnt, line + 3);
		}
	fclose(f);
	return path;
}
