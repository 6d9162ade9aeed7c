/* Retention of runs' stored data (see retention.h). */
#include "supervisor/retention.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "child/rundir.h"
#include "supervisor/record_file.h"
#include "supervisor/run_records.h"

/* STATE_DIR/runs, not created: -ENOENT when there is none.  Ours and
 * private, like every reader of it demands. */
static int open_runs(const char *state_dir)
{
	char *path = al_strdup_printf("%s/" AL_RUNS_DIR, state_dir);
	if (path == NULL)
		return -ENOMEM;
	int fd = al_open_own_dir(path, 0077);
	free(path);
	return fd;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* How long a run named to be forgotten is waited for while its daemon,
 * having answered it (its final.json is there), cleans up under its
 * lock: a moment, normally. */
#define ANSWERED_WAIT_MS 2000

/* The run directory's lock: 0, -EBUSY when another holds it, or -errno.
 * wait: an answered run's is waited for (ANSWERED_WAIT_MS at most). */
static int lock_run(int d, bool wait)
{
	int rc = al_record_file_lock_wait(d, 0);
	if (rc == -EWOULDBLOCK && wait &&
	    faccessat(d, AL_RF_FINAL, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		rc = al_record_file_lock_wait(d, ANSWERED_WAIT_MS);
	return rc == -EWOULDBLOCK ? -EBUSY : rc;
}

/* One run directory: 1 removed, 0 too young, -EBUSY live (unfinished, or
 * being finished: its lock is held), -ENOENT none, other: failure.  A run
 * named (any_age) whose daemon is cleaning up after answering it is
 * waited for. */
static int forget_dir(int runs, const char *id, bool any_age,
		      uint64_t older_than_ms, int64_t now)
{
	int d = openat(runs, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					 O_CLOEXEC);
	if (d < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	struct stat st;
	int rc = lock_run(d, any_age);
	if (rc < 0) {
		/* live, or being finished */
	} else if (fstatat(d, AL_RF_FINAL, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		/* No final result: live, or waiting for a daemon to
		 * recover it. */
		rc = errno == ENOENT ? -EBUSY : -errno;
	} else if (!any_age &&
		   now - ((int64_t)st.st_mtim.tv_sec * 1000 +
			  st.st_mtim.tv_nsec / 1000000) <
			   (int64_t)older_than_ms) {
		rc = 0;
	} else {
		rc = al_remove_hidden_at(runs, id);
		rc = rc < 0 ? rc : 1;
	}
	close(d);
	return rc;
}

/* The store of a run whose directory went (or that never had one). */
static void forget_store(const char *state_dir, const char *id,
			 al_forget_stats *st)
{
	char *ids[1] = {(char *)id};
	if (al_artifacts_forget(state_dir, 0, ids, 1, st, NULL) < 0)
		st->failed++;
}

static int forget_named(const char *state_dir, int runs, char *const *ids,
			size_t n, al_forget_stats *stats)
{
	int64_t now = now_ms();
	for (size_t i = 0; i < n; i++) {
		if (!al_run_id_safe(ids[i])) {
			stats->missing++;
			continue;
		}
		int dr = runs >= 0 ? forget_dir(runs, ids[i], true, 0, now)
				   : -ENOENT;
		if (dr == -EBUSY) {
			stats->live++;
			continue;
		}
		al_forget_stats s;
		forget_store(state_dir, ids[i], &s);
		if (s.live > 0) {
			stats->live++; /* its directory is gone already */
		} else if (dr < 0 && dr != -ENOENT) {
			stats->failed++;
			/* the operator's next question: what stayed, why */
			al_logf(AL_LOG_WARN, ids[i],
				"cannot remove the run's directory: %s",
				strerror(-dr));
		} else if (s.failed > 0) {
			stats->failed++;
			al_logf(AL_LOG_WARN, ids[i],
				"cannot remove the run's artifact store");
		}
		else if (dr == 1 || s.removed > 0)
			stats->removed++;
		else
			stats->missing++;
	}
	return 0;
}

/* A run directory, or a removal a crash interrupted. */
static bool runs_entry(const char *name)
{
	return strncmp(name, AL_GONE_PREFIX, strlen(AL_GONE_PREFIX)) == 0 ||
	       al_run_id_valid(name);
}

static int forget_aged(const char *state_dir, int runs, uint64_t older_ms,
		       al_forget_stats *stats, al_error **err)
{
	al_forget_stats s;
	char **names = NULL;
	size_t n = 0;
	if (runs >= 0) {
		int rc = al_dir_names_at(runs, runs_entry, &names, &n);
		if (rc == -ENOMEM)
			return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
					    "out of memory");
		if (rc < 0)
			return al_error_set(err, AL_ERR_IO, -rc, NULL,
					    "cannot list the run directories");
	}
	int64_t now = now_ms();
	for (size_t i = 0; i < n; i++) {
		if (names[i][0] == '.') {
			/* A removal a crash interrupted. */
			(void)al_remove_tree_at(runs, names[i]);
			continue;
		}
		int dr = forget_dir(runs, names[i], false, older_ms, now);
		if (dr == 1) {
			forget_store(state_dir, names[i], &s);
			stats->removed++;
		} else if (dr < 0 && dr != -EBUSY && dr != -ENOENT) {
			stats->failed++;
		}
	}
	al_strv_free(names, n);
	/* Then the stores left: runs made without a directory (the
	 * command line's) and those of the runs kept above. */
	if (al_artifacts_forget(state_dir, older_ms, NULL, 0, &s, err) < 0)
		return -EIO;
	stats->removed += s.removed;
	stats->live += s.live;
	stats->kept += s.kept;
	stats->failed += s.failed;
	return 0;
}

int al_runs_forget(const char *state_dir, uint64_t older_than_ms,
		   char *const *run_ids, size_t n_run_ids,
		   al_forget_stats *stats, al_error **err)
{
	memset(stats, 0, sizeof(*stats));
	int runs = open_runs(state_dir);
	if (runs < 0 && runs != -ENOENT)
		return al_error_set(err, AL_ERR_IO, -runs, NULL,
				    "cannot open the run directories");
	int rc = n_run_ids > 0
			 ? forget_named(state_dir, runs, run_ids, n_run_ids,
					stats)
			 : forget_aged(state_dir, runs, older_than_ms, stats,
				       err);
	if (runs >= 0)
		close(runs);
	return rc;
}
