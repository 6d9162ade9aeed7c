/* A run's artifact store: creation under a lock, reading, the log, and
 * retention (see artifacts.h). */
#include "child/artifacts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bundle/beneath.h"
#include "core/dir_spread.h"
#include "core/util.h"
#include "child/rundir.h"

#define NEW_PREFIX ".new-"

bool al_artifact_id_valid(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	if (n == 0 || n > 32)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '-'))
			return false;
	}
	return true;
}

/* STATE_DIR/artifacts, created 0700; it must be ours and writable by us
 * alone (another user must not be able to plant or swap stores). */
static int open_base(const char *state_dir, bool create)
{
	char *path = al_strdup_printf("%s/artifacts", state_dir);
	if (path == NULL)
		return -ENOMEM;
	if (create && mkdir(path, 0700) < 0 && errno != EEXIST) {
		int e = errno;
		free(path);
		return -e;
	}
	int fd = al_open_own_dir(path, 022);
	free(path);
	/* Each run's store is a subdirectory: placed where its inodes are
	 * cheap to allocate. */
	if (create && fd >= 0)
		al_dir_spread_children(fd);
	return fd;
}

static int unavailable(al_error **err, int e, const char *what)
{
	return al_error_set(err, AL_ERR_UNAVAILABLE, e, "artifacts_unavailable",
			    "cannot %s", what);
}

/* Renames ahead to base/tmp when it is fit to be the store (an empty
 * directory of ours, 0700: nothing was planted in it): 0, or -1 with
 * nothing changed (ahead put back when it was moved). */
static int take_ahead(int ahead_dirfd, const char *ahead, int base,
		      const char *tmp)
{
	if (ahead_dirfd < 0 ||
	    renameat2(ahead_dirfd, ahead, base, tmp, RENAME_NOREPLACE) < 0)
		return -1;
	int fd = openat(base, tmp,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	bool fit = fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
		   st.st_uid == geteuid() && (st.st_mode & 07777) == 0700;
	DIR *d = fit ? fdopendir(fd) : NULL;
	if (d != NULL) {
		fd = -1; /* the stream's now */
		const struct dirent *e;
		errno = 0;
		while (fit && (e = readdir(d)) != NULL)
			fit = strcmp(e->d_name, ".") == 0 ||
			      strcmp(e->d_name, "..") == 0;
		fit = fit && errno == 0;
		closedir(d);
	} else {
		fit = false;
	}
	if (fd >= 0)
		close(fd);
	if (fit)
		return 0;
	(void)renameat2(base, tmp, ahead_dirfd, ahead, RENAME_NOREPLACE);
	return -1;
}

int al_artifacts_create(const char *state_dir, const char *run_id,
			al_artifact_store *out, al_error **err)
{
	return al_artifacts_create_ahead(state_dir, run_id, -1, NULL, out,
					 err);
}

int al_artifacts_create_ahead(const char *state_dir, const char *run_id,
			      int ahead_dirfd, const char *ahead,
			      al_artifact_store *out, al_error **err)
{
	char tmp[64];
	int base = -1, fd = -1, rc = 0;
	out->dirfd = -1;
	out->path = NULL;
	if (state_dir == NULL || !al_run_id_safe(run_id))
		return unavailable(err, EINVAL, "name the run's artifact store");
	base = open_base(state_dir, true);
	if (base < 0)
		return unavailable(err, -base, "open the artifact base directory");
	snprintf(tmp, sizeof(tmp), NEW_PREFIX "%s", run_id);
	if (take_ahead(ahead_dirfd, ahead, base, tmp) < 0 &&
	    mkdirat(base, tmp, 0700) < 0) {
		rc = unavailable(err, errno, "create the run's artifact store");
		goto out;
	}
	fd = openat(base, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
		rc = unavailable(err, errno, "lock the run's artifact store");
		goto undo;
	}
	/* Locked before it has its name: retention never sees it unlocked
	 * while the run lives. */
	if (renameat2(base, tmp, base, run_id, RENAME_NOREPLACE) < 0) {
		rc = unavailable(err, errno, "name the run's artifact store");
		goto undo;
	}
	out->path = al_strdup_printf("%s/artifacts/%s", state_dir, run_id);
	if (out->path == NULL) {
		rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				  "out of memory");
		al_remove_tree_at(base, run_id);
		goto out;
	}
	out->dirfd = fd;
	fd = -1;
	goto out;
undo:
	al_remove_tree_at(base, tmp);
out:
	if (fd >= 0)
		close(fd);
	close(base);
	return rc;
}

void al_artifacts_close(al_artifact_store *s)
{
	/* A run refused before anything ran left nothing: no empty store
	 * is kept (still under the lock; fails harmlessly when not empty). */
	if (s->dirfd >= 0 && s->path != NULL)
		(void)rmdir(s->path);
	if (s->dirfd >= 0)
		close(s->dirfd); /* drops the lock */
	free(s->path);
	s->dirfd = -1;
	s->path = NULL;
}

bool al_artifacts_live(const char *state_dir, const char *run_id)
{
	int base = open_base(state_dir, false);
	if (base < 0)
		return false;
	int fd = openat(base, run_id,
			O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	bool live = fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) < 0 &&
		    errno == EWOULDBLOCK;
	if (fd >= 0)
		close(fd);
	close(base);
	return live;
}

int al_artifacts_open_dir(const char *artifact_dir)
{
	if (artifact_dir == NULL)
		return -1;
	int fd = open(artifact_dir,
		      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -1 : fd;
}

int al_artifact_open(const char *state_dir, const char *run_id,
		     const char *artifact)
{
	if (state_dir == NULL || !al_run_id_safe(run_id) ||
	    !al_artifact_id_valid(artifact))
		return -EINVAL;
	int base = open_base(state_dir, false);
	if (base < 0)
		return base == -EPERM ? -EPERM : -ENOENT;
	char rel[80];
	snprintf(rel, sizeof(rel), "%s/%s", run_id, artifact);
	int fd = al_open_beneath(base, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	close(base);
	if (fd < 0)
		return fd == -ENOTDIR || fd == -ELOOP ? -ENOENT : fd;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

int al_artifacts_exist(const char *state_dir, const char *run_id)
{
	if (state_dir == NULL || !al_run_id_safe(run_id))
		return -EINVAL;
	int base = open_base(state_dir, false);
	if (base == -ENOENT)
		return 0;
	if (base < 0)
		return base;
	char tmp[64];
	struct stat st;
	snprintf(tmp, sizeof(tmp), NEW_PREFIX "%s", run_id);
	/* A store being made under its dot name counts: it is one. */
	int rc = fstatat(base, run_id, &st, AT_SYMLINK_NOFOLLOW) == 0 ||
				 fstatat(base, tmp, &st, AT_SYMLINK_NOFOLLOW) ==
					 0
			 ? 1
			 : 0;
	close(base);
	return rc;
}

/* ---- the log ---------------------------------------------------------- */

void al_runlog_open(al_runlog *log, int store_dirfd, uint64_t cap,
		    al_output_fn fwd, void *fwd_ctx)
{
	memset(log, 0, sizeof(*log));
	log->fd = -1;
	log->cap = cap;
	log->fwd = fwd;
	log->fwd_ctx = fwd_ctx;
	if (store_dirfd >= 0)
		log->fd = openat(store_dirfd, AL_ARTIFACT_LOG,
				 O_WRONLY | O_CREAT | O_EXCL | O_APPEND |
					 O_NOFOLLOW | O_CLOEXEC,
				 0600);
}

void al_runlog_output(void *ctx, int stream, const unsigned char *data,
		      size_t len)
{
	al_runlog *log = ctx;
	if (log->fwd != NULL)
		log->fwd(log->fwd_ctx, stream, data, len);
	if (log->fd < 0 || (stream != AL_STDOUT && stream != AL_STDERR))
		return;
	uint64_t room = log->cap - log->kept[stream];
	size_t n = len < room ? len : (size_t)room;
	while (n > 0) {
		ssize_t w = write(log->fd, data, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) { /* a full disk ends the log, not the run */
			close(log->fd);
			log->fd = -1;
			return;
		}
		data += w;
		n -= (size_t)w;
		log->kept[stream] += (uint64_t)w;
	}
}

void al_runlog_close(al_runlog *log)
{
	if (log->fd >= 0)
		close(log->fd);
	log->fd = -1;
}

/* ---- retention -------------------------------------------------------- */

/* One store: removed unless live (locked) or, when older_than_ms is not
 * UINT64_MAX-style "any age", too young. */
static void forget_one(int base, const char *name, bool any_age,
		       uint64_t older_than_ms, int64_t now_ms,
		       al_forget_stats *st)
{
	int fd = openat(base, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					   O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			st->missing++;
		else
			st->failed++;
		return;
	}
	struct stat s;
	if (fstat(fd, &s) < 0) {
		st->failed++;
		close(fd);
		return;
	}
	int64_t changed = (int64_t)s.st_mtim.tv_sec * 1000 +
			  s.st_mtim.tv_nsec / 1000000;
	/* A store being created has a dot name until it is locked: give
	 * it time, whatever the retention asked for. */
	int64_t min_age = (int64_t)older_than_ms;
	if (name[0] == '.' && min_age < 60000)
		min_age = 60000;
	if (!any_age && now_ms - changed < min_age) {
		st->kept++;
		close(fd);
		return;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			st->live++;
		else
			st->failed++;
		close(fd);
		return;
	}
	if (al_remove_hidden_at(base, name) < 0)
		st->failed++;
	else
		st->removed++;
	close(fd);
}

/* A run's store, or one a crash left half made or half removed. */
static bool store_entry(const char *name)
{
	return strncmp(name, NEW_PREFIX, strlen(NEW_PREFIX)) == 0 ||
	       strncmp(name, AL_GONE_PREFIX, strlen(AL_GONE_PREFIX)) == 0 ||
	       al_run_id_safe(name);
}

int al_artifacts_forget(const char *state_dir, uint64_t older_than_ms,
			char *const *run_ids, size_t n_run_ids,
			al_forget_stats *stats, al_error **err)
{
	memset(stats, 0, sizeof(*stats));
	int base = open_base(state_dir, false);
	if (base == -ENOENT) {
		stats->missing = n_run_ids;
		return 0;
	}
	if (base < 0)
		return al_error_set(err, AL_ERR_IO, -base, NULL,
				    "cannot open the artifact base directory");
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (n_run_ids > 0) {
		for (size_t i = 0; i < n_run_ids; i++) {
			if (!al_run_id_safe(run_ids[i]))
				stats->missing++;
			else
				forget_one(base, run_ids[i], true, 0, now,
					   stats);
		}
		close(base);
		return 0;
	}
	char **names = NULL;
	size_t n = 0;
	int rc = al_dir_names_at(base, store_entry, &names, &n);
	if (rc < 0) {
		close(base);
		if (rc == -ENOMEM)
			return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
					    "out of memory");
		return al_error_set(err, AL_ERR_IO, -rc, NULL,
				    "cannot list the artifact stores");
	}
	for (size_t i = 0; i < n; i++)
		forget_one(base, names[i], false, older_than_ms, now, stats);
	al_strv_free(names, n);
	close(base);
	return 0;
}
