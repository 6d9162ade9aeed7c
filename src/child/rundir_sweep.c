/* A run directory's owner mark and the sweep of leftovers whose creator
 * is gone (see rundir_sweep.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "child/rundir.h"
#include "child/rundir_sweep.h"

/* A hidden directory (one being made, one being swept) without a
 * lockable, complete mark is swept only when older than this: its maker
 * holds it for a few system calls, so one this old was left by a process
 * that died on the way. */
#define SWEEP_MIN_AGE_S 60
/* How often a long-lived process sweeps a base again. */
#define SWEEP_EVERY_S 60
/* Bases remembered for the rate limit; a process uses one or two. */
#define SWEEP_BASES 8

static unsigned name_seq;

static int hidden_name(char *buf, size_t size, const char *prefix)
{
	unsigned seq = __atomic_fetch_add(&name_seq, 1, __ATOMIC_RELAXED);
	int n = snprintf(buf, size, "%s%d-%u", prefix, (int)getpid(), seq);
	return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

int al_rundir_gone_name(char *buf, size_t size)
{
	return hidden_name(buf, size, AL_RUNDIR_GONE_PREFIX);
}

static bool is_hidden(const char *name)
{
	return strncmp(name, AL_RUNDIR_NEW_PREFIX,
		       strlen(AL_RUNDIR_NEW_PREFIX)) == 0 ||
	       strncmp(name, AL_RUNDIR_GONE_PREFIX,
		       strlen(AL_RUNDIR_GONE_PREFIX)) == 0;
}

/* base_fd/from to base_fd/to, never replacing an existing to. */
static int rename_noreplace(int base_fd, const char *from, const char *to)
{
	if (renameat2(base_fd, from, base_fd, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL)
		return -errno;
	/* A filesystem without RENAME_NOREPLACE: names are unique (run
	 * ids, pid and sequence), the check only reports a clash. */
	struct stat st;
	if (fstatat(base_fd, to, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	return renameat(base_fd, from, base_fd, to) == 0 ? 0 : -errno;
}

int al_rundir_owned_mkdir(int base_fd, const char *run_id, int *owner_fd)
{
	char tmp[64];
	int rc = al_rundir_owned_mkdir_hidden(base_fd, tmp, sizeof(tmp),
					      owner_fd);
	if (rc < 0)
		return rc;
	if ((rc = rename_noreplace(base_fd, tmp, run_id)) < 0) {
		close(*owner_fd);
		*owner_fd = -1;
		(void)al_remove_tree_at(base_fd, tmp);
	}
	return rc;
}

int al_rundir_owned_mkdir_hidden(int base_fd, char *tmp, size_t size,
				 int *owner_fd)
{
	int rc = -EEXIST, dfd = -1, fd = -1;
	*owner_fd = -1;
	for (int tries = 0; tries < 64 && rc == -EEXIST; tries++) {
		if ((rc = hidden_name(tmp, size, AL_RUNDIR_NEW_PREFIX)) < 0)
			return rc;
		if (mkdirat(base_fd, tmp, 0700) < 0)
			rc = -errno;
	}
	if (rc < 0)
		return rc;
	dfd = openat(base_fd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd >= 0)
		fd = openat(dfd, AL_RUNDIR_OWNER,
			    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
	if (fd < 0) {
		rc = -errno;
		goto fail;
	}
	/* Blocking: a sweep that opened the mark before its content was
	 * written holds the lock for a moment, finds no content and lets
	 * go without touching the directory. */
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			rc = -errno;
			goto fail;
		}
	/* Written only while locked: a sweep that gets the lock and reads
	 * the whole mark knows its holder had it and is gone. */
	if ((rc = al_write_all(fd, AL_RUNDIR_OWNER_MARK,
			    strlen(AL_RUNDIR_OWNER_MARK))) < 0)
		goto fail;
	close(dfd);
	*owner_fd = fd;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	(void)al_remove_tree_at(base_fd, tmp);
	return rc;
}

typedef enum { OWNER_LIVE, OWNER_GONE, OWNER_UNPROVEN } owner_state;

/* The owner of the directory dfd, by its mark.  OWNER_GONE: the mark is
 * a complete one of ours and nobody holds its lock; *lock_fd then holds
 * it (as it does for OWNER_UNPROVEN when a mark could be locked), so no
 * other sweep acts on the directory meanwhile. */
static owner_state owner_of(int dfd, int *lock_fd)
{
	struct stat st;
	*lock_fd = -1;
	/* Only a regular file is opened: nothing with side effects. */
	if (fstatat(dfd, AL_RUNDIR_OWNER, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? OWNER_UNPROVEN : OWNER_LIVE;
	if (!S_ISREG(st.st_mode))
		return OWNER_UNPROVEN;
	int fd = openat(dfd, AL_RUNDIR_OWNER,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? OWNER_UNPROVEN : OWNER_LIVE;
	/* Any failure to lock (not only EWOULDBLOCK) counts as a holder. */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return OWNER_LIVE;
	}
	*lock_fd = fd;
	char buf[sizeof(AL_RUNDIR_OWNER_MARK) + 1];
	size_t want = strlen(AL_RUNDIR_OWNER_MARK);
	ssize_t n = pread(fd, buf, sizeof(buf), 0);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || n != (ssize_t)want ||
	    memcmp(buf, AL_RUNDIR_OWNER_MARK, want) != 0)
		return OWNER_UNPROVEN;
	return OWNER_GONE;
}

/* Moves base_fd/name (the directory dfd) out of its run id's sight and
 * removes it.  true when it is gone. */
static bool remove_run_dir(int base_fd, const char *name, int dfd)
{
	char gone[64];
	struct stat a, b;
	if (hidden_name(gone, sizeof(gone), AL_RUNDIR_GONE_PREFIX) < 0 ||
	    fstat(dfd, &a) < 0 || rename_noreplace(base_fd, name, gone) < 0)
		return false;
	/* Still the directory whose mark was checked (names are never
	 * reused; this only guards that). */
	if (fstatat(base_fd, gone, &b, AT_SYMLINK_NOFOLLOW) < 0 ||
	    a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		(void)rename_noreplace(base_fd, gone, name);
		return false;
	}
	return al_remove_tree_at(base_fd, gone) == 0;
}

/* 1 when base_fd/name was a leftover and is removed, else 0. */
static int sweep_one(int base_fd, const char *name, time_t now)
{
	int removed = 0, lock_fd = -1;
	int dfd = openat(base_fd, name,
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (dfd < 0 || fstat(dfd, &st) < 0 || st.st_uid != geteuid())
		goto out;
	owner_state o = owner_of(dfd, &lock_fd);
	if (!is_hidden(name)) {
		/* A run id's directory: only with the proof. */
		if (o == OWNER_GONE)
			removed = remove_run_dir(base_fd, name, dfd);
	} else if (o == OWNER_GONE ||
		   (o == OWNER_UNPROVEN &&
		    now - st.st_mtime >= SWEEP_MIN_AGE_S)) {
		removed = al_remove_tree_at(base_fd, name) == 0;
	}
out:
	/* Released only now: the lock kept other sweeps off meanwhile. */
	if (lock_fd >= 0)
		close(lock_fd);
	if (dfd >= 0)
		close(dfd);
	return removed;
}

static bool sweep_candidate(const char *name)
{
	return al_run_id_safe(name) || is_hidden(name);
}

int al_rundir_sweep_at(int base_fd)
{
	char **names = NULL;
	size_t n = 0;
	if (al_dir_names_at(base_fd, sweep_candidate, &names, &n) < 0)
		return 0;
	time_t now = time(NULL);
	int removed = 0;
	for (size_t i = 0; i < n; i++)
		removed += sweep_one(base_fd, names[i], now);
	al_strv_free(names, n);
	return removed;
}

static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	dev_t dev;
	ino_t ino;
	time_t at; /* CLOCK_MONOTONIC seconds; 0: unused */
} seen[SWEEP_BASES];

void al_rundir_sweep_maybe(int base_fd)
{
	struct stat st;
	struct timespec ts;
	if (fstat(base_fd, &st) < 0 ||
	    clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
		return;
	/* +1: a boot's first second is not "unused". */
	time_t now = ts.tv_sec + 1;
	bool due = true;
	int slot = 0;
	pthread_mutex_lock(&seen_mu);
	for (int i = 0; i < SWEEP_BASES; i++) {
		if (seen[i].at != 0 && seen[i].dev == st.st_dev &&
		    seen[i].ino == st.st_ino) {
			slot = i;
			due = now - seen[i].at >= SWEEP_EVERY_S;
			break;
		}
		if (seen[i].at < seen[slot].at)
			slot = i; /* unused or least recent */
	}
	if (due) {
		seen[slot].dev = st.st_dev;
		seen[slot].ino = st.st_ino;
		seen[slot].at = now;
	}
	pthread_mutex_unlock(&seen_mu);
	if (due)
		(void)al_rundir_sweep_at(base_fd);
}
