/* Link-free opening beneath a directory descriptor (see beneath.h). */
#include "bundle/beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static atomic_bool no_openat2;
static atomic_bool forced_walk;

void al_beneath_force_walk(bool on)
{
	atomic_store(&forced_walk, on);
}

/* The segment walk: every segment opened without following a link. */
static int walk_beneath(int dirfd, const char *path, int flags)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);
	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	if (len == 0 || path[0] == '/')
		return -EXDEV;
	if (strcmp(path, ".") == 0) {
		int fd = openat(dirfd, ".", flags | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	memcpy(buf, path, len + 1);
	int cur = -1;
	char *seg = buf;
	for (char *slash; (slash = strchr(seg, '/')) != NULL;
	     seg = slash + 1) {
		*slash = '\0';
		if (seg[0] == '\0' || strcmp(seg, ".") == 0 ||
		    strcmp(seg, "..") == 0) {
			if (cur >= 0)
				close(cur);
			return -EXDEV;
		}
		int next = openat(cur >= 0 ? cur : dirfd, seg,
				  O_PATH | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		struct stat st;
		if (next >= 0 && fstat(next, &st) < 0)
			e = errno;
		else if (next >= 0 && S_ISLNK(st.st_mode))
			e = ELOOP;
		else if (next >= 0 && !S_ISDIR(st.st_mode))
			e = ENOTDIR;
		else if (next >= 0)
			e = 0;
		if (cur >= 0)
			close(cur);
		if (e != 0) {
			if (next >= 0)
				close(next);
			return -e;
		}
		cur = next;
	}
	if (seg[0] == '\0' || strcmp(seg, ".") == 0 || strcmp(seg, "..") == 0) {
		if (cur >= 0)
			close(cur);
		return -EXDEV;
	}
	int fd = openat(cur >= 0 ? cur : dirfd, seg,
			flags | O_NOFOLLOW | O_CLOEXEC);
	int e = errno;
	if (cur >= 0)
		close(cur);
	return fd < 0 ? -e : fd;
}

int al_open_beneath(int dirfd, const char *path, int flags)
{
	if (atomic_load(&forced_walk) || atomic_load(&no_openat2))
		return walk_beneath(dirfd, path, flags);
	struct open_how how;
	memset(&how, 0, sizeof(how));
	how.flags = (unsigned long long)(flags | O_CLOEXEC | O_NOFOLLOW);
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
		      RESOLVE_NO_MAGICLINKS;
	long fd;
	do
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	while (fd < 0 && errno == EINTR);
	if (fd < 0 && errno == ENOSYS) {
		atomic_store(&no_openat2, true);
		return walk_beneath(dirfd, path, flags);
	}
	return fd < 0 ? -errno : (int)fd;
}

/* One directory level: created when missing (when create), then opened
 * without following a link. */
static int step_into(int cur, const char *name, bool create, uid_t uid,
		     gid_t gid)
{
	bool made = false;
	if (create) {
		if (mkdirat(cur, name, 0755) == 0)
			made = true;
		else if (errno != EEXIST)
			return -errno;
	}
	int fd = al_open_beneath(cur, name, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	/* Exactly 0755 whatever the umask, and the run's own. */
	if (made && (fchmod(fd, 0755) < 0 ||
		     (uid != (uid_t)-1 && fchown(fd, uid, gid) < 0))) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

int al_open_parent_beneath(int dirfd, const char *rel, bool create,
			   uid_t uid, gid_t gid, int *parent,
			   const char **base)
{
	char buf[PATH_MAX];
	size_t len = strlen(rel);
	*parent = -1;
	if (len == 0 || len >= sizeof(buf) || rel[0] == '/')
		return -EINVAL;
	memcpy(buf, rel, len + 1);
	int cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return -errno;
	char *seg = buf;
	for (char *slash; (slash = strchr(seg, '/')) != NULL;
	     seg = slash + 1) {
		*slash = '\0';
		if (seg[0] == '\0' || strcmp(seg, ".") == 0 ||
		    strcmp(seg, "..") == 0) {
			close(cur);
			return -EINVAL;
		}
		int next = step_into(cur, seg, create, uid, gid);
		close(cur);
		if (next < 0)
			return next;
		cur = next;
	}
	*parent = cur;
	*base = rel + (seg - buf);
	return 0;
}
