/* User namespace id maps and the pool of per-run host uids (a lock per
 * uid, shared by every airlock process on the host). */
#include "sandbox/userns.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int write_proc(pid_t pid, const char *file, const char *text)
{
	char path[64];
	if (pid == 0)
		snprintf(path, sizeof(path), "/proc/self/%s", file);
	else
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = strlen(text);
	ssize_t w = write(fd, text, len);
	int rc = w == (ssize_t)len ? 0 : (w < 0 ? -errno : -EIO);
	close(fd);
	return rc;
}

int al_sb_write_idmaps(pid_t pid, uid_t host_uid, gid_t host_gid)
{
	char line[64];
	int rc = write_proc(pid, "setgroups", "deny");
	if (rc < 0)
		return rc;
	snprintf(line, sizeof(line), "0 %u 1\n", (unsigned)host_uid);
	rc = write_proc(pid, "uid_map", line);
	if (rc < 0)
		return rc;
	snprintf(line, sizeof(line), "0 %u 1\n", (unsigned)host_gid);
	return write_proc(pid, "gid_map", line);
}

/* ---- the uid pool ----------------------------------------------------- */

/* Open the pool's lock file: in a root-owned directory nobody else can
 * write, not a symlink, root's regular file.  One file serves every range:
 * the byte at offset <uid> stands for that uid. */
static int open_pool(void)
{
	if (mkdir(AL_SB_UID_LOCK_DIR, 0755) < 0 && errno != EEXIST)
		return -errno;
	struct stat st;
	if (lstat(AL_SB_UID_LOCK_DIR, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
		return -EPERM;
	int fd = open(AL_SB_UID_LOCK_FILE,
		      O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int al_sb_uid_pool_check(void)
{
	int fd = open_pool();
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

int al_sb_uid_take(uint32_t base, uint32_t count, al_sb_uid *out)
{
	out->fd = -1;
	int fd = open_pool();
	if (fd < 0)
		return fd;
	for (uint32_t i = 0; i < count; i++) {
		/* An open-file-description lock: it conflicts with every other
		 * description, in this process or another, and goes away with
		 * the last descriptor (and so with a crashed process). */
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET,
				   .l_start = (off_t)base + i, .l_len = 1};
		if (fcntl(fd, F_OFD_SETLK, &fl) == 0) {
			out->uid = (uid_t)(base + i);
			out->fd = fd;
			return 0;
		}
		if (errno != EAGAIN && errno != EACCES) {
			int rc = -errno;
			close(fd);
			return rc;
		}
	}
	close(fd);
	return -EAGAIN;
}

void al_sb_uid_give(al_sb_uid *u)
{
	if (u->fd >= 0)
		close(u->fd);
	u->fd = -1;
}
