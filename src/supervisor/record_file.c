/* Durable-file helpers (see record_file.h). */
#include "supervisor/record_file.h"
#include "core/util.h"
#include "supervisor/fault.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int al_record_file_sync_dir(int dirfd)
{
	return fsync(dirfd) == 0 ? 0 : -errno;
}

static void blank_name(char *buf, size_t size, unsigned i)
{
	snprintf(buf, size, ".blank.%u", i);
}

int al_record_file_blanks_make(int dirfd)
{
	char name[32];
	for (unsigned i = 0; i < AL_RECORD_FILE_BLANKS; i++) {
		blank_name(name, sizeof(name), i);
		int fd = openat(dirfd, name,
				O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					O_CLOEXEC,
				0600);
		if (fd < 0)
			return -errno;
		/* Its first blocks allocated now, its size still zero: a
		 * record written into them reserves no delayed allocation, so
		 * renaming it over an older record does not make ext4 start
		 * its writeback on the spot (auto_da_alloc).  A file system
		 * that cannot allocate ahead gets a plain blank. */
		(void)fallocate(fd, FALLOC_FL_KEEP_SIZE, 0,
				AL_RECORD_FILE_BLANK_BYTES);
		close(fd);
	}
	return 0;
}

void al_record_file_blanks_drop(int dirfd)
{
	char name[32];
	for (unsigned i = 0; i < AL_RECORD_FILE_BLANKS; i++) {
		blank_name(name, sizeof(name), i);
		unlinkat(dirfd, name, 0);
	}
}

/* A blank made ahead, renamed to tmp and opened for writing: no inode is
 * allocated now.  -1 (errno untouched) when there is none, or when the
 * one found is not an empty file of ours: that one goes back under
 * its name, and the caller creates tmp as it would have. */
static int take_blank(int dirfd, const char *tmp)
{
	char name[32];
	int saved = errno;
	for (unsigned i = 0; i < AL_RECORD_FILE_BLANKS; i++) {
		blank_name(name, sizeof(name), i);
		if (renameat2(dirfd, name, dirfd, tmp, RENAME_NOREPLACE) < 0) {
			if (errno == ENOENT)
				continue;
			break;
		}
		/* Used only while it is an empty file of ours alone, never
		 * a link to another file.  It is not truncated: on ext4 a
		 * truncation to zero makes the next close start the file's
		 * writeback (auto_da_alloc), a block-layer submission per
		 * record that an unsynced write does not need. */
		int fd = openat(dirfd, tmp,
				O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_uid == geteuid() && st.st_nlink == 1 &&
		    st.st_size == 0) {
			errno = saved;
			return fd;
		}
		if (fd >= 0)
			close(fd);
		(void)renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE);
		break;
	}
	errno = saved;
	return -1;
}

int al_record_file_write(int dirfd, const char *name, const void *data, size_t len,
		   mode_t mode)
{
	return al_record_file_write_how(dirfd, name, data, len, mode, AL_RECORD_FILE_DURABLE);
}

int al_record_file_write_how(int dirfd, const char *name, const void *data,
		       size_t len, mode_t mode, al_record_file_how how)
{
	char tmp[128];
	int rc, fd;

	/* A name private to this thread: writers never share a temp. */
	if (snprintf(tmp, sizeof(tmp), ".%s.%d.%d.tmp", name, (int)getpid(),
		     (int)gettid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = take_blank(dirfd, tmp);
	if (fd < 0)
		fd = openat(dirfd, tmp,
			    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
				    O_CLOEXEC,
			    mode);
	if (fd < 0)
		return -errno;
	rc = al_write_all(fd, data, len);
	if (rc == 0 && fchmod(fd, mode) < 0)
		rc = -errno;
	if (rc == 0 && how != AL_RECORD_FILE_ATOMIC && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	if (rc == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		rc = -errno;
	if (rc < 0) {
		unlinkat(dirfd, tmp, 0);
		return rc;
	}
	return how == AL_RECORD_FILE_DURABLE ? al_record_file_sync_dir(dirfd) : 0;
}

bool al_record_file_no_space(int err)
{
	return err == -ENOSPC || err == -EDQUOT;
}

int al_record_file_reserve_make(int dirfd, const char *tmp, size_t size)
{
	int fd = openat(dirfd, tmp,
			O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0600);
	if (fd < 0)
		return -errno;
	int rc = fallocate(fd, 0, 0, (off_t)size) < 0 ? -errno : 0;
	close(fd);
	if (rc < 0)
		unlinkat(dirfd, tmp, 0);
	return rc;
}

/* A reserve made ahead: ours, regular, exactly size bytes. */
static int open_made(int dirfd, const char *tmp, size_t size)
{
	int fd = openat(dirfd, tmp, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || st.st_size != (off_t)size) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int al_record_file_reserve_open(int dirfd, const char *tmp, size_t size,
			  al_record_file_reserve *r)
{
	r->fd = -1;
	r->size = 0;
	r->entry_durable = false;
	if (snprintf(r->tmp, sizeof(r->tmp), "%s", tmp) >= (int)sizeof(r->tmp))
		return -ENAMETOOLONG;
	int made = open_made(dirfd, tmp, size);
	if (made >= 0) {
		r->fd = made;
		r->size = size;
		r->entry_durable = true;
		return 0;
	}
	int fd = openat(dirfd, tmp,
			O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
			0600);
	if (fd < 0)
		return -errno;
	int rc = fallocate(fd, 0, 0, (off_t)size);
	if (rc < 0) {
		rc = -errno;
		close(fd);
		unlinkat(dirfd, tmp, 0);
		return rc;
	}
	r->fd = fd;
	r->size = size;
	return 0;
}

int al_record_file_reserve_commit(int dirfd, al_record_file_reserve *r, const char *name,
			    const void *data, size_t len)
{
	if (r->fd < 0)
		return -EBADF;
	if (len > r->size)
		return -EFBIG;
	size_t done = 0;
	while (done < len) {
		ssize_t n = pwrite(r->fd, (const char *)data + done, len - done,
				   (off_t)done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		done += (size_t)n;
	}
	/* Shrinking frees blocks, it never needs one. */
	if (ftruncate(r->fd, (off_t)len) < 0 || fsync(r->fd) < 0)
		return -errno;
	al_fault_point("record_unnamed");
	if (renameat(dirfd, r->tmp, dirfd, name) < 0)
		return -errno;
	close(r->fd);
	r->fd = -1;
	r->size = 0;
	return r->entry_durable ? 0 : al_record_file_sync_dir(dirfd);
}

int al_record_file_sync_named(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc < 0 ? rc : al_record_file_sync_dir(dirfd);
}

int al_record_file_settle(int dirfd, const char *tmp, const char *name,
			  size_t max)
{
	if (al_record_file_exists(dirfd, name))
		return 0;
	char *text = NULL;
	size_t len = 0;
	int rc = al_record_file_read(dirfd, tmp, max, &text, &len);
	if (rc < 0)
		return rc == -ENOENT ? 0 : rc;
	/* A torn or unfinished write holds NUL bytes (the space was
	 * allocated, never written) or ends early: not one whole object. */
	json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	bool whole = v != NULL && json_is_object(v);
	json_decref(v);
	free(text);
	if (!whole)
		return 0;
	/* Its writer may have died before its own sync: the record is made
	 * durable before it is named. */
	int fd = openat(dirfd, tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	if (rc < 0)
		return rc;
	if (renameat(dirfd, tmp, dirfd, name) < 0)
		return errno == ENOENT ? 0 : -errno;
	rc = al_record_file_sync_dir(dirfd);
	return rc < 0 ? rc : 1;
}

void al_record_file_reserve_drop(int dirfd, al_record_file_reserve *r)
{
	if (r->fd < 0)
		return;
	unlinkat(dirfd, r->tmp, 0);
	close(r->fd);
	r->fd = -1;
	r->size = 0;
}

int al_record_file_write_json(int dirfd, const char *name, const json_t *v,
			mode_t mode)
{
	return al_record_file_write_json_how(dirfd, name, v, mode, AL_RECORD_FILE_DURABLE);
}

int al_record_file_write_json_how(int dirfd, const char *name, const json_t *v,
			    mode_t mode, al_record_file_how how)
{
	char *text = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (text == NULL)
		return -ENOMEM;
	int rc = al_record_file_write_how(dirfd, name, text, strlen(text), mode, how);
	free(text);
	return rc;
}

int al_record_file_read(int dirfd, const char *name, size_t max, char **out,
		  size_t *len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	*out = NULL;
	if (len != NULL)
		*len = 0;
	if (fd < 0)
		return errno == ELOOP ? -EINVAL : -errno;
	int rc = al_read_whole_fd(fd, max, out, len);
	close(fd);
	return rc;
}

int al_record_file_read_json(int dirfd, const char *name, size_t max,
		       json_t **out)
{
	char *text = NULL;
	size_t len = 0;
	*out = NULL;
	int rc = al_record_file_read(dirfd, name, max, &text, &len);
	if (rc < 0)
		return rc;
	json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	free(text);
	if (!json_is_object(v)) {
		json_decref(v);
		return -EBADMSG;
	}
	*out = v;
	return 0;
}

bool al_record_file_exists(int dirfd, const char *name)
{
	struct stat st;
	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int al_record_file_touch(int dirfd, const char *name)
{
	int fd = openat(dirfd, name,
			O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0600);
	if (fd < 0)
		return errno == EEXIST ? 1 : -errno;
	int rc = fsync(fd) == 0 ? 0 : -errno;
	close(fd);
	return rc == 0 ? al_record_file_sync_dir(dirfd) : rc;
}

int al_record_file_read_u64(int dirfd, const char *name, uint64_t *out)
{
	char *text = NULL;
	int rc = al_record_file_read(dirfd, name, 64, &text, NULL);
	if (rc < 0 || text == NULL)
		return rc < 0 ? rc : -EBADMSG;
	char *end = NULL;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno != 0 || end == text || (*end != '\0' && *end != '\n') ||
	    text[0] < '0' || text[0] > '9')
		rc = -EBADMSG;
	else
		*out = v;
	free(text);
	return rc;
}

int al_record_file_write_u64(int dirfd, const char *name, uint64_t v)
{
	return al_record_file_write_u64_how(dirfd, name, v, AL_RECORD_FILE_DURABLE);
}

int al_record_file_write_u64_how(int dirfd, const char *name, uint64_t v,
			   al_record_file_how how)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%" PRIu64 "\n", v);
	return al_record_file_write_how(dirfd, name, buf, (size_t)n, 0600, how);
}

/* Takes fd's exclusive flock; the fd on success, else closes it and
 * returns -errno. */
static int lock_or_close(int fd)
{
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			return -e;
		}
	}
	return fd;
}

int al_record_file_lock_dir(int dirfd)
{
	/* Its own open file description: flock locks belong to one, and
	 * closing it releases the lock. */
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return lock_or_close(fd);
}

int al_record_file_lock_wait(int fd, int wait_ms)
{
	for (int waited = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; waited += 5) {
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK || waited >= wait_ms)
			return -errno;
		struct timespec ts = {0, 5 * 1000000L};
		nanosleep(&ts, NULL);
	}
	return 0;
}

int al_record_file_lock(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
			0600);
	if (fd < 0)
		return -errno;
	return lock_or_close(fd);
}
