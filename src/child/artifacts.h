/* Internal: a run's artifact store (docs/workspaces.md).
 *
 * STATE_DIR/artifacts/<run id>/ (0700) holds one file per artifact id
 * (0600): the collected outputs ("out-1", "out-2", ...) and the run's
 * combined output ("log").  While its run is live, the store's directory
 * carries an exclusive flock held by whoever created it (the host), so
 * retention can tell a live run from an expired one without trusting
 * timestamps or records: the kernel drops the lock when the holder ends,
 * however it ends. */
#ifndef AL_CHILD_ARTIFACTS_H
#define AL_CHILD_ARTIFACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <airlock/error.h>
#include <airlock/provider.h>

#include "child/rundir.h"

#define AL_ARTIFACT_LOG "log"

/* An artifact id: "log" or "out-<n>"-like, [a-z0-9-], 1 to 32 bytes. */
bool al_artifact_id_valid(const char *id);

typedef struct al_artifact_store {
	int dirfd; /* the run's store, locked; -1 when none */
	char *path;
} al_artifact_store;

/* Creates and locks the run's store (it must not exist yet).  It is
 * built under a dot name and renamed into place once locked, so it is
 * never seen unlocked while its run is live.  Errors: AL_ERR_UNAVAILABLE,
 * reason "artifacts_unavailable". */
int al_artifacts_create(const char *state_dir, const char *run_id,
			al_artifact_store *out, al_error **err);
/* The same, taking the empty directory `ahead` beneath ahead_dirfd (made
 * ahead of the run, on the state directory's file system) as the store
 * rather than making one: it is renamed in, and used only when it is an
 * empty directory of ours, mode 0700; otherwise it is put back and a
 * store is made as al_artifacts_create does. */
int al_artifacts_create_ahead(const char *state_dir, const char *run_id,
			      int ahead_dirfd, const char *ahead,
			      al_artifact_store *out, al_error **err);
/* Unlocks (the run has ended) and closes; an empty store is removed. */
void al_artifacts_close(al_artifact_store *s);

/* true while a live process holds the run's store (its lock is held). */
bool al_artifacts_live(const char *state_dir, const char *run_id);

/* A provider's side: the store named in al_exec, opened O_DIRECTORY
 * without following a link.  -1 when artifact_dir is NULL or cannot be
 * opened. */
int al_artifacts_open_dir(const char *artifact_dir);

/* Opens one artifact of a run for reading: a regular file reached
 * without a link.  The fd, or -ENOENT (no such run or artifact), -EINVAL
 * (a malformed id) or another -errno. */
int al_artifact_open(const char *state_dir, const char *run_id,
		     const char *artifact);

/* 1 when the run has an artifact store (or one is being made), 0 when
 * not, <0 on error: a run id with a store was used. */
int al_artifacts_exist(const char *state_dir, const char *run_id);

/* The run's combined output, as it arrives: at most `cap` bytes of each
 * stream (the bytes the result keeps), then nothing more of it.  Used as
 * the supervision loop's output callback; forwards every chunk to fwd
 * (streaming) when set. */
typedef struct al_runlog {
	int fd;
	uint64_t cap;
	uint64_t kept[2];
	al_output_fn fwd;
	void *fwd_ctx;
} al_runlog;

/* Creates "log" in the store dir (-1: no log, only forwarding). */
void al_runlog_open(al_runlog *log, int store_dirfd, uint64_t cap,
		    al_output_fn fwd, void *fwd_ctx);
void al_runlog_output(void *ctx, int stream, const unsigned char *data,
		      size_t len);
void al_runlog_close(al_runlog *log);

/* Retention.  Removes the stores (and nothing else) of runs whose store
 * was last changed more than older_than_ms ago, or, with run_ids, exactly
 * those runs whatever their age.  A store whose lock is held belongs to
 * a live run and is left alone.  Counts what it did. */
typedef struct al_forget_stats {
	size_t removed;
	size_t live;	  /* locked: still running */
	size_t missing;	  /* named in run_ids, no such store */
	size_t failed;
	size_t kept;	  /* not old enough */
} al_forget_stats;

int al_artifacts_forget(const char *state_dir, uint64_t older_than_ms,
			char *const *run_ids, size_t n_run_ids,
			al_forget_stats *stats, al_error **err);

#endif
