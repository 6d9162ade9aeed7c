/* Internal: the host's SQLite database (STATE_DIR/airlock.db, WAL): the
 * audit trail and the idempotency keys. */
#ifndef AL_HOST_DB_H
#define AL_HOST_DB_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#include <airlock/error.h>

struct al_audit_waiter;

typedef struct al_db {
	sqlite3 *db;
	/* One connection serves every thread; transactions are serialised
	 * here (other processes are held off by SQLite's own locks). */
	pthread_mutex_t lock;
	/* Group commit of audit appends (src/host/audit.c): appends that
	 * arrive while a commit is in flight wait here and go out together
	 * in the next transaction, one sync for all of them. */
	pthread_mutex_t queue_lock;
	pthread_cond_t queue_done;
	struct al_audit_waiter *queue;
	bool committing;
	/* The last commit's checkpoint copied the whole WAL (db.c). */
	bool wal_backfilled;
	/* Transactions and records committed by appends (for measuring). */
	uint64_t audit_commits, audit_records;
} al_db;

/* Creates state_dir (0700) when missing, opens or creates the database and
 * its schema.  busy_ms: how long a write waits for another writer. */
int al_db_open(const char *state_dir, uint64_t busy_ms, al_db **out,
	       al_error **err);
void al_db_close(al_db *db);
/* Opens an existing database read-only (verify, tail). */
int al_db_open_readonly(const char *state_dir, sqlite3 **out, al_error **err);

#endif
