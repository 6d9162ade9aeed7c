/* Trust in the state directory (see state_dir.h). */
#include "host/state_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int al_state_dir_check(const char *state_dir, al_error **err)
{
	/* The path itself may be a link (/var/lib/airlock -> /data/...):
	 * what is checked is the directory it names. */
	int fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return al_error_set(err, AL_ERR_IO, errno, "state_dir",
				    "cannot open the state directory %s: %s",
				    state_dir, strerror(errno));
	int rc = fstat(fd, &st) < 0 ? -errno : 0;
	close(fd);
	if (rc < 0)
		return al_error_set(err, AL_ERR_IO, -rc, "state_dir",
				    "cannot read the state directory %s: %s",
				    state_dir, strerror(-rc));
	/* Another user who can write it can plant links and records;
	 * one who can read it reads stored output. */
	if (st.st_uid != geteuid())
		return al_error_set(err, AL_ERR_UNAVAILABLE, EPERM,
				    "state_dir_untrusted",
				    "the state directory %s is owned by another "
				    "user (uid %u); use a directory of your own",
				    state_dir, (unsigned)st.st_uid);
	if ((st.st_mode & 077) != 0)
		return al_error_set(err, AL_ERR_UNAVAILABLE, EPERM,
				    "state_dir_untrusted",
				    "the state directory %s is open to other "
				    "users (mode %04o); run: chmod 700 %s",
				    state_dir, (unsigned)(st.st_mode & 07777),
				    state_dir);
	return 0;
}

/* One database file: absent (when not created here), or a regular file
 * of ours with one name, tightened to 0600. */
static int db_file(int dirfd, const char *state_dir, const char *name,
		   bool create, al_error **err)
{
	int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
	if (create)
		flags |= O_CREAT;
	int fd = openat(dirfd, name, flags, 0600);
	if (fd < 0 && errno == ENOENT && !create)
		return 0;
	if (fd < 0 && errno == ELOOP)
		return al_error_set(err, AL_ERR_UNAVAILABLE, ELOOP,
				    "state_dir_untrusted",
				    "%s in the state directory %s is a "
				    "symbolic link",
				    name, state_dir);
	if (fd < 0)
		return al_error_set(err, AL_ERR_IO, errno, "state_dir",
				    "cannot open %s in the state directory "
				    "%s: %s",
				    name, state_dir, strerror(errno));
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) < 0)
		rc = al_error_set(err, AL_ERR_IO, errno, "state_dir",
				  "cannot read %s in the state directory: %s",
				  name, strerror(errno));
	else if (!S_ISREG(st.st_mode) || st.st_nlink != 1 ||
		 st.st_uid != geteuid())
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, EPERM,
				  "state_dir_untrusted",
				  "%s in the state directory %s is not a "
				  "regular file of this user with one name",
				  name, state_dir);
	else if ((st.st_mode & 077) != 0 && fchmod(fd, 0600) < 0)
		rc = al_error_set(err, AL_ERR_IO, errno, "state_dir",
				  "cannot make %s private: %s", name,
				  strerror(errno));
	close(fd);
	return rc;
}

int al_state_db_files_check(const char *state_dir, bool create,
			    al_error **err)
{
	static const char *const extra[] = {"airlock.db-wal",
					    "airlock.db-shm"};
	int dirfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return al_error_set(err, AL_ERR_IO, errno, "state_dir",
				    "cannot open the state directory %s: %s",
				    state_dir, strerror(errno));
	int rc = db_file(dirfd, state_dir, "airlock.db", create, err);
	for (size_t i = 0; rc == 0 && i < sizeof(extra) / sizeof(extra[0]);
	     i++)
		rc = db_file(dirfd, state_dir, extra[i], false, err);
	close(dirfd);
	return rc;
}
