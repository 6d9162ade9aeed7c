/* Idempotency keys.  Stored results live in SQLite, scoped per tenant
 * (tenant, key) -> (canonical request sha256, result JSON, time), kept for
 * the configured retention.  Runs still in flight are tracked in memory, so
 * a duplicate arriving while the first is running waits for that result
 * instead of running twice. */
#include "host/idempotency.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/contract.h>

typedef struct inflight {
	char *tenant, *key;
	char req_hash[65];
	bool done;
	char *result_json; /* NULL when done without a stored result */
	unsigned waiters;
	pthread_cond_t cond;
	struct inflight *next;
} inflight;

struct al_idem {
	al_db *db;
	uint64_t retention_ms;
	pthread_mutex_t lock;
	inflight *list;
};

al_idem *al_idem_new(al_db *db, uint64_t retention_s)
{
	al_idem *i = calloc(1, sizeof(*i));
	if (!i)
		return NULL;
	i->db = db;
	i->retention_ms = retention_s * 1000u;
	pthread_mutex_init(&i->lock, NULL);
	return i;
}

static void inflight_free(inflight *f)
{
	free(f->tenant);
	free(f->key);
	free(f->result_json);
	pthread_cond_destroy(&f->cond);
	free(f);
}

void al_idem_free(al_idem *idem)
{
	if (!idem)
		return;
	for (inflight *f = idem->list, *n; f; f = n) {
		n = f->next;
		inflight_free(f);
	}
	pthread_mutex_destroy(&idem->lock);
	free(idem);
}

static inflight *find(al_idem *idem, const char *tenant, const char *key)
{
	for (inflight *f = idem->list; f; f = f->next)
		if (strcmp(f->tenant, tenant) == 0 && strcmp(f->key, key) == 0)
			return f;
	return NULL;
}

static void unlink_entry(al_idem *idem, inflight *f)
{
	for (inflight **pp = &idem->list; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			return;
		}
}

/* Looks the key up in the database (expired rows are purged first).
 * 1: found (*hash and *result set), 0: absent, <0: error. */
static int db_lookup(al_idem *idem, const char *tenant, const char *key,
		     char hash[65], char **result)
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	pthread_mutex_lock(&idem->db->lock);
	if (sqlite3_prepare_v2(idem->db->db,
			       "DELETE FROM idempotency WHERE created_ms < ?",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1,
			       al_now_ms() - (int64_t)idem->retention_ms) !=
		    SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE) {
		rc = -EIO;
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (sqlite3_prepare_v2(idem->db->db,
			       "SELECT request_sha256, result FROM idempotency "
			       "WHERE tenant = ? AND key = ?",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC) != SQLITE_OK) {
		rc = -EIO;
		goto out;
	}
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		const char *h = (const char *)sqlite3_column_text(st, 0);
		const char *r = (const char *)sqlite3_column_text(st, 1);
		if (!h || !r || strlen(h) != 64) {
			rc = -EIO;
			goto out;
		}
		memcpy(hash, h, 65);
		if (!(*result = strdup(r))) {
			rc = -ENOMEM;
			goto out;
		}
		rc = 1;
	} else if (step != SQLITE_DONE) {
		rc = -EIO;
	}
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&idem->db->lock);
	return rc;
}

int al_idem_claim(al_idem *idem, const char *tenant, const char *key,
		  const char *req_hash, char **result_json, al_error **err)
{
	int rc;
	*result_json = NULL;
	pthread_mutex_lock(&idem->lock);
	for (;;) {
		inflight *f = find(idem, tenant, key);
		if (!f)
			break;
		if (strcmp(f->req_hash, req_hash) != 0) {
			pthread_mutex_unlock(&idem->lock);
			return AL_IDEM_CONFLICT;
		}
		f->waiters++;
		while (!f->done)
			pthread_cond_wait(&f->cond, &idem->lock);
		f->waiters--;
		char *copy = NULL;
		if (f->result_json && !(copy = strdup(f->result_json)))
			rc = -ENOMEM;
		else
			rc = copy ? AL_IDEM_STORED : 0;
		/* finish() unlinked it; the last waiter frees it. */
		if (f->waiters == 0)
			inflight_free(f);
		if (rc == -ENOMEM) {
			pthread_mutex_unlock(&idem->lock);
			return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
					    "out of memory");
		}
		if (rc == AL_IDEM_STORED) {
			pthread_mutex_unlock(&idem->lock);
			*result_json = copy;
			return AL_IDEM_STORED;
		}
		/* Finished without a stored result: look again. */
	}
	char hash[65];
	char *stored = NULL;
	rc = db_lookup(idem, tenant, key, hash, &stored);
	if (rc < 0) {
		pthread_mutex_unlock(&idem->lock);
		return al_error_set(err, AL_ERR_IO, -rc, "idempotency",
				    "idempotency store failed");
	}
	if (rc == 1) {
		pthread_mutex_unlock(&idem->lock);
		if (strcmp(hash, req_hash) != 0) {
			free(stored);
			return AL_IDEM_CONFLICT;
		}
		*result_json = stored;
		return AL_IDEM_STORED;
	}
	inflight *f = calloc(1, sizeof(*f));
	if (!f || !(f->tenant = strdup(tenant)) || !(f->key = strdup(key))) {
		if (f) {
			free(f->tenant);
			free(f);
		}
		pthread_mutex_unlock(&idem->lock);
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	}
	memcpy(f->req_hash, req_hash, 64);
	f->req_hash[64] = '\0';
	pthread_cond_init(&f->cond, NULL);
	f->next = idem->list;
	idem->list = f;
	pthread_mutex_unlock(&idem->lock);
	return AL_IDEM_CLAIMED;
}

static void db_store(al_idem *idem, const char *tenant, const char *key,
		     const char *req_hash, const char *result_json)
{
	sqlite3_stmt *st = NULL;
	pthread_mutex_lock(&idem->db->lock);
	if (sqlite3_exec(idem->db->db, "PRAGMA synchronous=FULL", NULL, NULL,
			 NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(idem->db->db,
			       "INSERT OR REPLACE INTO idempotency (tenant, "
			       "key, request_sha256, result, created_ms) "
			       "VALUES (?, ?, ?, ?, ?)",
			       -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC) == SQLITE_OK &&
	    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC) == SQLITE_OK &&
	    sqlite3_bind_text(st, 3, req_hash, -1, SQLITE_STATIC) ==
		    SQLITE_OK &&
	    sqlite3_bind_text(st, 4, result_json, -1, SQLITE_STATIC) ==
		    SQLITE_OK &&
	    sqlite3_bind_int64(st, 5, al_now_ms()) == SQLITE_OK)
		(void)sqlite3_step(st);
	/* A failed store leaves the in-memory result for current waiters;
	 * a later duplicate would run again (docs/host.md). */
	sqlite3_finalize(st);
	pthread_mutex_unlock(&idem->db->lock);
}

void al_idem_finish(al_idem *idem, const char *tenant, const char *key,
		    const char *req_hash, const char *result_json)
{
	if (result_json)
		db_store(idem, tenant, key, req_hash, result_json);
	pthread_mutex_lock(&idem->lock);
	inflight *f = find(idem, tenant, key);
	if (f) {
		f->done = true;
		if (result_json)
			f->result_json = strdup(result_json);
		/* Later callers go to the database (or claim afresh). */
		unlink_entry(idem, f);
		if (f->waiters == 0) {
			inflight_free(f);
		} else {
			pthread_cond_broadcast(&f->cond);
		}
	}
	pthread_mutex_unlock(&idem->lock);
}

/* The stored results that name run_id (their "run_id" field): 1 when one
 * does, 0 when none, <0 on error.  del: removes them instead (retention,
 * "runs forget"), returning 0. */
static int by_run(al_db *db, const char *run_id, bool del)
{
	sqlite3_stmt *st = NULL;
	int rc;
	pthread_mutex_lock(&db->lock);
	if (sqlite3_prepare_v2(
		    db->db,
		    del ? "DELETE FROM idempotency WHERE "
			  "json_valid(result) AND "
			  "json_extract(result, '$.run_id') = ?"
			: "SELECT 1 FROM idempotency WHERE json_valid(result) "
			  "AND json_extract(result, '$.run_id') = ? LIMIT 1",
		    -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC) != SQLITE_OK) {
		rc = -EIO;
		goto out;
	}
	int step = sqlite3_step(st);
	rc = step == SQLITE_ROW ? 1 : step == SQLITE_DONE ? 0 : -EIO;
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&db->lock);
	return rc;
}

int al_idem_names_run(al_idem *idem, const char *run_id)
{
	return by_run(idem->db, run_id, false);
}

int al_idem_forget_run(al_db *db, const char *run_id)
{
	return by_run(db, run_id, true);
}
