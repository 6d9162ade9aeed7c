/* Link-free opening beneath a directory descriptor (see beneath.h). */
#include "bundle/beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int al_open_beneath(int dirfd, const char *path, int flags)
{
	struct open_how how;
	memset(&how, 0, sizeof(how));
	how.flags = (unsigned long long)(flags | O_CLOEXEC | O_NOFOLLOW);
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
		      RESOLVE_NO_MAGICLINKS;
	long fd;
	do
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	while (fd < 0 && errno == EINTR);
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
