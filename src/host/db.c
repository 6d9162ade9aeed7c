/* The host database.  WAL lets readers (audit tail, verify) run beside the
 * writer; the schema makes the audit table append-only with triggers, but
 * verification never relies on them (docs/audit.md). */
#include "host/db.h"
#include "host/db_vfs.h"
#include "host/state_dir.h"

#include <errno.h>
#include <time.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS audit ("
	" seq INTEGER PRIMARY KEY,"
	" prev_hash TEXT NOT NULL,"
	" hash TEXT NOT NULL,"
	" record TEXT NOT NULL);"
	"CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit"
	" BEGIN SELECT RAISE(ABORT, 'audit trail is append-only'); END;"
	"CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit"
	" BEGIN SELECT RAISE(ABORT, 'audit trail is append-only'); END;"
	"CREATE TABLE IF NOT EXISTS idempotency ("
	" tenant TEXT NOT NULL,"
	" key TEXT NOT NULL,"
	" request_sha256 TEXT NOT NULL,"
	" result TEXT NOT NULL,"
	" created_ms INTEGER NOT NULL,"
	" PRIMARY KEY (tenant, key));";

/* WAL pages before a commit checkpoints (SQLite's default 1000): about
 * five CLI runs.  Each process that opens the database first reads every WAL
 * frame since the last checkpoint to rebuild the WAL index, so a
 * one-shot `airlock run` pays for the WAL's length at its start
 * (docs/performance.md, "SQLite's WAL, shorter"). */
#define AL_DB_WAL_PAGES 16

/* After each commit (SQLite's wal_autocheckpoint, plus one thing): once
 * the WAL holds AL_DB_WAL_PAGES frames, checkpoint what no reader needs,
 * and remember whether that was all of it.  A process's WAL-index
 * recovery forgets how far earlier checkpoints got, so a WAL that is
 * never restarted is copied again, whole, by every process that commits
 * once (a refused `airlock run`): it grew by a run's frames per process
 * until a process committed twice.  al_db_close empties a WAL that is
 * all in the database. */
static int wal_committed(void *arg, sqlite3 *db, const char *name, int frames)
{
	al_db *d = arg;
	d->wal_backfilled = false;
	if (frames < AL_DB_WAL_PAGES)
		return SQLITE_OK;
	int in_log = 0, copied = 0;
	if (sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE,
				      &in_log, &copied) == SQLITE_OK &&
	    in_log > 0 && copied == in_log)
		d->wal_backfilled = true;
	/* As SQLite's own hook: a checkpoint that could not finish (a
	 * reader elsewhere) is retried after a later commit. */
	return SQLITE_OK;
}

/* The schema is already there (every object of it): parsing and running
 * its DDL again costs more than this lookup. */
static int schema_ready(sqlite3 *db, int *ready)
{
	sqlite3_stmt *st = NULL;
	*ready = 0;
	int r = sqlite3_prepare_v2(db,
				   "SELECT count(*) FROM sqlite_schema WHERE name IN"
				   " ('audit', 'audit_no_update', 'audit_no_delete',"
				   " 'idempotency')",
				   -1, &st, NULL);
	if (r != SQLITE_OK)
		return r;
	r = sqlite3_step(st);
	if (r == SQLITE_ROW) {
		*ready = sqlite3_column_int(st, 0) == 4;
		r = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return r;
}

static int db_path(const char *state_dir, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/airlock.db", state_dir);
	return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : 0;
}

int al_db_open(const char *state_dir, uint64_t busy_ms, al_db **out,
	       al_error **err)
{
	char path[PATH_MAX];
	al_db *d = NULL;
	char *msg = NULL;
	int rc;

	*out = NULL;
	if (db_path(state_dir, path, sizeof(path)) < 0)
		return al_error_set(err, AL_ERR_INVALID_ARGUMENT, ENAMETOOLONG,
				    "state_dir", "state directory path too "
						 "long");
	if (mkdir(state_dir, 0700) < 0 && errno != EEXIST)
		return al_error_set(err, AL_ERR_IO, errno, "state_dir",
				    "cannot create the state directory");
	/* The database is created 0600 here (SQLite would make it 0644;
	 * it makes -wal and -shm with the database's mode). */
	if ((rc = al_state_dir_check(state_dir, err)) < 0 ||
	    (rc = al_state_db_files_check(state_dir, true, err)) < 0)
		return rc;
	d = calloc(1, sizeof(*d));
	if (!d)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	pthread_mutex_init(&d->lock, NULL);
	pthread_mutex_init(&d->queue_lock, NULL);
	pthread_cond_init(&d->queue_done, NULL);
	if (sqlite3_open_v2(path, &d->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
				    SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW,
			    al_db_vfs()) != SQLITE_OK) {
		rc = al_error_set(err, AL_ERR_IO, EIO, "state_dir",
				  "cannot open the database: %s",
				  d->db ? sqlite3_errmsg(d->db) : "?");
		goto fail;
	}
	sqlite3_busy_timeout(d->db, busy_ms > INT_MAX ? INT_MAX : (int)busy_ms);
	/* Closing the last connection would checkpoint the WAL into the
	 * database and delete it: three more fsyncs, an unlink and, for the
	 * next process, a new WAL file (its header synced, the directory
	 * synced).  Commits are durable once in the WAL, so a CLI process
	 * leaves it in place; a commit checkpoints once the WAL passes
	 * AL_DB_WAL_PAGES (kept small so that the next opener's WAL-index
	 * recovery reads little), and the close empties a WAL whose last
	 * checkpoint copied all of it (wal_committed). */
	sqlite3_db_config(d->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
	/* Switching to WAL and creating the schema can meet SQLITE_BUSY
	 * without the busy handler being called (another process is doing
	 * the same the first time a state directory is used): retry, bounded
	 * by the busy timeout. */
	for (uint64_t waited = 0;; waited += 10) {
		sqlite3_free(msg);
		msg = NULL;
		int r = sqlite3_exec(d->db,
				     "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;",
				     NULL, NULL, &msg);
		int ready = 0;
		if (r == SQLITE_OK)
			r = schema_ready(d->db, &ready);
		if (r == SQLITE_OK && !ready)
			r = sqlite3_exec(d->db, schema, NULL, NULL, &msg);
		if (r == SQLITE_OK) {
			sqlite3_wal_hook(d->db, wal_committed, d);
			break;
		}
		if ((r != SQLITE_BUSY && r != SQLITE_LOCKED) || waited >= busy_ms)
			break;
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	if (msg != NULL) {
		rc = al_error_set(err, AL_ERR_IO, EIO, "state_dir",
				  "cannot set up the database: %s",
				  msg ? msg : "?");
		goto fail;
	}
	*out = d;
	return 0;
fail:
	sqlite3_free(msg);
	al_db_close(d);
	return rc;
}

void al_db_close(al_db *d)
{
	if (!d)
		return;
	/* Everything in the WAL is in the database, synced: truncate the
	 * WAL so that the next process recovers nothing from it.  Never
	 * waits: another process reading or writing keeps it as it is. */
	if (d->db && d->wal_backfilled) {
		sqlite3_busy_timeout(d->db, 0);
		(void)sqlite3_wal_checkpoint_v2(d->db, NULL,
						SQLITE_CHECKPOINT_TRUNCATE,
						NULL, NULL);
	}
	sqlite3_close(d->db);
	pthread_mutex_destroy(&d->lock);
	pthread_mutex_destroy(&d->queue_lock);
	pthread_cond_destroy(&d->queue_done);
	free(d);
}

int al_db_open_readonly(const char *state_dir, sqlite3 **out, al_error **err)
{
	char path[PATH_MAX];
	*out = NULL;
	if (db_path(state_dir, path, sizeof(path)) < 0)
		return al_error_set(err, AL_ERR_INVALID_ARGUMENT, ENAMETOOLONG,
				    "state_dir", "state directory path too "
						 "long");
	int rc;
	if ((rc = al_state_dir_check(state_dir, err)) < 0 ||
	    (rc = al_state_db_files_check(state_dir, false, err)) < 0)
		return rc;
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(path, &db,
			    SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW,
			    al_db_vfs()) != SQLITE_OK) {
		sqlite3_close(db);
		return al_error_set(err, AL_ERR_NOT_FOUND, ENOENT, "state_dir",
				    "no airlock database in the state "
				    "directory");
	}
	sqlite3_busy_timeout(db, 5000);
	*out = db;
	return 0;
}
