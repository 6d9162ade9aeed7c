/* The audit trail: one row per event, each row chained to the one before by
 * hash = sha256(prev_hash || record), where record is the canonical JSON
 * text (sorted keys, compact) and prev_hash the previous row's hash (64
 * zeros for the first).  The record carries its own seq, so moving a record
 * breaks the chain as surely as editing or removing one.  Writers take
 * SQLite's write lock (BEGIN IMMEDIATE) before reading the chain's head, so
 * two processes sharing a state directory cannot fork the chain. */
#include "host/audit.h"
#include "core/hash.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/contract.h>
#include <airlock/host.h>
#include <airlock/json.h>

static const char zero_hash[65] =
	"0000000000000000000000000000000000000000000000000000000000000000";

/* Streamed over its two parts (al_digest, no heap): hashing cannot fail,
 * so no record is ever committed with a hash that does not verify. */
static void chain_hash(const char *prev, const char *record, char out[65])
{
	al_digest d;
	(void)al_digest_init(&d);
	(void)al_digest_update(&d, prev, strlen(prev));
	(void)al_digest_update(&d, record, strlen(record));
	(void)al_digest_final(&d, out);
}

/* json_dumps can return a text with parts left out when an allocation
 * fails part way (jansson 2.14 drops a key): a record is committed only
 * when its text reads back as the record itself. */
static bool text_is(const char *text, const json_t *record)
{
	json_t *back = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	bool same = back != NULL && json_equal(back, record);
	json_decref(back);
	return same;
}

static int exec_sql(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

/* The chain's head: the seq the next record takes and the hash it chains
 * to (1 and 64 zeros when the trail is empty).  0 or -EIO. */
static int chain_head(sqlite3 *db, int64_t *next_seq, char hash[65])
{
	sqlite3_stmt *st = NULL;
	int rc = 0;
	*next_seq = 1;
	memcpy(hash, zero_hash, 65);
	if (sqlite3_prepare_v2(db,
			       "SELECT seq, hash FROM audit ORDER BY seq DESC "
			       "LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	int step = sqlite3_step(st);
	if (step == SQLITE_ROW) {
		const char *h = (const char *)sqlite3_column_text(st, 1);
		*next_seq = sqlite3_column_int64(st, 0) + 1;
		snprintf(hash, 65, "%s", h ? h : "");
	} else if (step != SQLITE_DONE) {
		rc = -EIO;
	}
	sqlite3_finalize(st);
	return rc;
}

/* One append waiting for its commit.  Group commit: the first append to
 * find no commit in flight becomes the leader and commits every waiting
 * record in one transaction (one WAL sync for all of them); appends that
 * arrive meanwhile queue for the next one.  No timer: a record waits at
 * most for the commit in flight and its own, and each append still
 * returns only once its record is committed (run.started stays durable
 * before the run starts). */
typedef struct al_audit_waiter {
	json_t *record;
	bool full;
	bool done;
	int rc;
	char msg[200];
	struct al_audit_waiter *next;
} al_audit_waiter;

/* Serialises and checks one record at seq, chained to prev; 0, -ENOMEM
 * (the record is refused alone) or -EIO (the transaction fails). */
static int insert_one(sqlite3 *db, al_audit_waiter *w, int64_t seq,
		      const char *prev, char hash[65])
{
	sqlite3_stmt *st = NULL;
	char *text = NULL;
	char when[32];
	int rc = 0;

	al_format_time_ms(al_now_ms(), when, sizeof(when));
	if (json_object_set_new(w->record, "seq", json_integer(seq)) < 0 ||
	    json_object_set_new(w->record, "time", json_string(when)) < 0 ||
	    !(text = json_dumps(w->record, JSON_COMPACT | JSON_SORT_KEYS)) ||
	    !text_is(text, w->record)) {
		free(text);
		return -ENOMEM;
	}
	chain_hash(prev, text, hash);
	if (sqlite3_prepare_v2(db,
			       "INSERT INTO audit (seq, prev_hash, hash, "
			       "record) VALUES (?, ?, ?, ?)",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, seq) != SQLITE_OK ||
	    sqlite3_bind_text(st, 2, prev, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 3, hash, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(st, 4, text, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE)
		rc = -EIO;
	sqlite3_finalize(st);
	free(text);
	return rc;
}

/* Commits the batch in one transaction, synchronous=FULL when any of its
 * records asks for it.  A record that cannot be serialised is refused on
 * its own; a database failure refuses the whole batch (nothing of it is
 * committed). */
static void commit_batch(al_db *d, al_audit_waiter *batch)
{
	char prev[65], hash[65], why[200] = "";
	int64_t seq = 1;
	bool full = false;
	int rc = 0;
	uint64_t n = 0;

	for (al_audit_waiter *w = batch; w; w = w->next)
		full = full || w->full;
	pthread_mutex_lock(&d->lock);
	if (exec_sql(d->db, full ? "PRAGMA synchronous=FULL"
				 : "PRAGMA synchronous=NORMAL") < 0 ||
	    exec_sql(d->db, "BEGIN IMMEDIATE") < 0) {
		rc = -EIO;
		goto out;
	}
	if ((rc = chain_head(d->db, &seq, prev)) < 0)
		goto rollback;
	for (al_audit_waiter *w = batch; w; w = w->next) {
		w->rc = insert_one(d->db, w, seq, prev, hash);
		if (w->rc == -EIO) {
			rc = -EIO;
			goto rollback;
		}
		if (w->rc == 0) {
			memcpy(prev, hash, sizeof(prev));
			seq++;
			n++;
		}
	}
	if (exec_sql(d->db, "COMMIT") == 0) {
		d->audit_commits++;
		d->audit_records += n;
		goto out;
	}
	rc = -EIO;
rollback:
	/* The failure's message, before ROLLBACK replaces it. */
	snprintf(why, sizeof(why), "%s", sqlite3_errmsg(d->db));
	exec_sql(d->db, "ROLLBACK");
out:
	if (rc < 0 && why[0] == '\0')
		snprintf(why, sizeof(why), "%s", sqlite3_errmsg(d->db));
	for (al_audit_waiter *w = batch; w; w = w->next) {
		if (rc < 0)
			w->rc = rc;
		if (w->rc == -EIO)
			snprintf(w->msg, sizeof(w->msg), "%s", why);
	}
	pthread_mutex_unlock(&d->lock);
}

int al_audit_append(al_db *d, json_t *record, bool full, al_error **err)
{
	al_audit_waiter self = {.record = record, .full = full};

	pthread_mutex_lock(&d->queue_lock);
	al_audit_waiter **tail = &d->queue;
	while (*tail)
		tail = &(*tail)->next;
	*tail = &self;
	while (!self.done) {
		if (d->committing) {
			pthread_cond_wait(&d->queue_done, &d->queue_lock);
			continue;
		}
		/* Lead: take every waiting record (this one among them). */
		al_audit_waiter *batch = d->queue;
		d->queue = NULL;
		d->committing = true;
		pthread_mutex_unlock(&d->queue_lock);
		commit_batch(d, batch);
		pthread_mutex_lock(&d->queue_lock);
		for (al_audit_waiter *w = batch; w; w = w->next)
			w->done = true;
		d->committing = false;
		pthread_cond_broadcast(&d->queue_done);
	}
	pthread_mutex_unlock(&d->queue_lock);

	if (self.rc == -ENOMEM)
		al_error_set(err, AL_ERR_INTERNAL, ENOMEM, "audit_refused",
			     "audit write failed: out of memory");
	else if (self.rc < 0)
		al_error_set(err, AL_ERR_IO, -self.rc, "audit_refused",
			     "audit write failed: %s", self.msg);
	return self.rc;
}

int al_audit_has_event(al_db *d, const char *run_id, const char *event)
{
	sqlite3_stmt *st = NULL;
	int rc;
	pthread_mutex_lock(&d->lock);
	/* event NULL: any record naming the run. */
	if (sqlite3_prepare_v2(d->db,
			       "SELECT 1 FROM audit WHERE "
			       "json_extract(record, '$.run_id') = ?1 AND "
			       "(?2 IS NULL OR "
			       "json_extract(record, '$.event') = ?2) LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(st, 1, run_id, -1, SQLITE_STATIC) != SQLITE_OK ||
	    (event != NULL
		     ? sqlite3_bind_text(st, 2, event, -1, SQLITE_STATIC)
		     : sqlite3_bind_null(st, 2)) != SQLITE_OK) {
		rc = -EIO;
		goto out;
	}
	int step = sqlite3_step(st);
	rc = step == SQLITE_ROW ? 1 : step == SQLITE_DONE ? 0 : -EIO;
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

/* 1 when the record at seq has this hash, 0 when not, -EIO. */
static int record_is(sqlite3 *db, int64_t seq, const char *hash)
{
	sqlite3_stmt *st = NULL;
	int rc = -EIO;
	if (sqlite3_prepare_v2(db, "SELECT hash FROM audit WHERE seq = ?", -1,
			       &st, NULL) == SQLITE_OK &&
	    sqlite3_bind_int64(st, 1, seq) == SQLITE_OK) {
		int step = sqlite3_step(st);
		const char *h = step == SQLITE_ROW
					? (const char *)sqlite3_column_text(st, 0)
					: NULL;
		rc = step == SQLITE_ROW ? h != NULL && strcmp(h, hash) == 0
					: step == SQLITE_DONE ? 0 : -EIO;
	}
	sqlite3_finalize(st);
	return rc;
}

int al_audit_open_starts(al_db *d, const al_audit_mark *from,
			 json_t **starts, al_audit_mark *head, al_error **err)
{
	sqlite3_stmt *st = NULL;
	json_t *arr = json_array();
	int64_t begin = 1;
	int rc = 0;

	*starts = NULL;
	head->seq = 1;
	memcpy(head->hash, zero_hash, sizeof(head->hash));
	if (arr == NULL)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	pthread_mutex_lock(&d->lock);
	/* The head first: a start appended after it (another process) is
	 * past it, so a search resuming at the head still sees it. */
	if ((rc = chain_head(d->db, &head->seq, head->hash)) < 0)
		goto out;
	/* A mark of another trail (the database replaced) is no mark. */
	if (from != NULL && from->seq > 1 && from->seq <= head->seq) {
		int is = record_is(d->db, from->seq - 1, from->hash);
		if (is < 0) {
			rc = is;
			goto out;
		}
		if (is == 1)
			begin = from->seq;
	}
	/* One pass over the trail from `begin`: each run's first start or
	 * finish, kept when the run has no finish. */
	if (sqlite3_prepare_v2(
		    d->db,
		    "SELECT record FROM audit WHERE seq IN (SELECT min(seq) "
		    "FROM audit WHERE seq >= ?1 AND json_extract(record, "
		    "'$.event') IN ('run.started', 'run.finished') GROUP BY "
		    "json_extract(record, '$.run_id') HAVING "
		    "sum(json_extract(record, '$.event') = 'run.finished') = 0)"
		    " ORDER BY seq",
		    -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, begin) != SQLITE_OK) {
		rc = -EIO;
		goto out;
	}
	int step;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		const char *rec = (const char *)sqlite3_column_text(st, 0);
		json_t *j = rec ? json_loads(rec, 0, NULL) : NULL;
		/* An unreadable row names no run to close: verify reports
		 * it. */
		if (json_is_string(json_object_get(j, "run_id")) &&
		    json_array_append(arr, j) < 0)
			rc = -ENOMEM;
		json_decref(j);
		if (rc < 0)
			goto out;
	}
	if (step != SQLITE_DONE)
		rc = -EIO;
out:
	if (rc < 0)
		al_error_set(err, rc == -ENOMEM ? AL_ERR_INTERNAL : AL_ERR_IO,
			     -rc, "audit", "cannot read the audit trail: %s",
			     rc == -ENOMEM ? "out of memory"
					   : sqlite3_errmsg(d->db));
	sqlite3_finalize(st);
	pthread_mutex_unlock(&d->lock);
	if (rc < 0)
		json_decref(arr);
	else
		*starts = arr;
	return rc;
}

int al_audit_close_start(al_db *d, const json_t *start, const char *outcome,
			 const char *reason, const char *detail,
			 al_error **err)
{
	json_t *rec = json_deep_copy(start);
	int rc = -ENOMEM;
	if (rec != NULL && json_object_del(rec, "seq") == 0 &&
	    json_object_del(rec, "time") == 0 &&
	    json_object_set_new(rec, "event", json_string("run.finished")) ==
		    0 &&
	    json_object_set_new(rec, "outcome", json_string(outcome)) == 0 &&
	    json_object_set_new(rec, "reason",
				reason ? json_string(reason) : json_null()) ==
		    0 &&
	    json_object_set_new(rec, "detail", json_string(detail)) == 0)
		rc = al_audit_append(d, rec, true, err);
	else
		al_error_set(err, AL_ERR_INTERNAL, ENOMEM, "audit_refused",
			     "out of memory");
	json_decref(rec);
	return rc;
}

static int verify_fail(al_error **err, int64_t seq, const char *what)
{
	return al_error_set(err, AL_ERR_IO, EBADMSG, "audit_chain_broken",
			    "audit chain broken at record %lld: %s",
			    (long long)seq, what);
}

int al_audit_verify(const char *state_dir, size_t *records, al_error **err)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	char expect_prev[65], hash[65];
	int64_t expect_seq = 1;
	size_t n = 0;
	int rc;

	if (records)
		*records = 0;
	if ((rc = al_db_open_readonly(state_dir, &db, err)) < 0)
		return rc;
	memcpy(expect_prev, zero_hash, sizeof(expect_prev));
	/* Rows are read in rowid order, the order they were appended in;
	 * the chain itself (not the triggers) is the evidence. */
	if (sqlite3_prepare_v2(db,
			       "SELECT seq, prev_hash, hash, record FROM audit "
			       "ORDER BY seq",
			       -1, &st, NULL) != SQLITE_OK) {
		rc = al_error_set(err, AL_ERR_IO, EIO, "audit",
				  "cannot read the audit trail: %s",
				  sqlite3_errmsg(db));
		goto out;
	}
	int step;
	while ((step = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t seq = sqlite3_column_int64(st, 0);
		const char *prev = (const char *)sqlite3_column_text(st, 1);
		const char *h = (const char *)sqlite3_column_text(st, 2);
		const char *rec = (const char *)sqlite3_column_text(st, 3);
		if (!prev || !h || !rec) {
			rc = verify_fail(err, seq, "missing field");
			goto out;
		}
		if (seq != expect_seq) {
			rc = verify_fail(err, seq, "sequence gap");
			goto out;
		}
		if (strcmp(prev, expect_prev) != 0) {
			rc = verify_fail(err, seq, "previous hash mismatch");
			goto out;
		}
		chain_hash(prev, rec, hash);
		if (strcmp(hash, h) != 0) {
			rc = verify_fail(err, seq, "record hash mismatch");
			goto out;
		}
		json_t *j = json_loads(rec, JSON_REJECT_DUPLICATES, NULL);
		json_t *js = j ? json_object_get(j, "seq") : NULL;
		bool seq_ok = js && json_is_integer(js) &&
			      json_integer_value(js) == seq;
		json_decref(j);
		if (!seq_ok) {
			rc = verify_fail(err, seq, "record sequence mismatch");
			goto out;
		}
		memcpy(expect_prev, h, 64);
		expect_prev[64] = '\0';
		expect_seq++;
		n++;
	}
	if (step != SQLITE_DONE) {
		rc = al_error_set(err, AL_ERR_IO, EIO, "audit",
				  "cannot read the audit trail: %s",
				  sqlite3_errmsg(db));
		goto out;
	}
	if (records)
		*records = n;
	rc = 0;
out:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

int al_audit_tail(const char *state_dir, size_t n, char **json_lines_out,
		  al_error **err)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	char *buf = NULL;
	size_t len = 0;
	int rc;

	*json_lines_out = NULL;
	if ((rc = al_db_open_readonly(state_dir, &db, err)) < 0)
		return rc;
	if (sqlite3_prepare_v2(db,
			       "SELECT prev_hash, hash, record FROM (SELECT * "
			       "FROM audit ORDER BY seq DESC LIMIT ?) ORDER BY "
			       "seq",
			       -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, (sqlite3_int64)(n > INT64_MAX ? INT64_MAX
								    : n)) !=
		    SQLITE_OK) {
		rc = al_error_set(err, AL_ERR_IO, EIO, "audit",
				  "cannot read the audit trail: %s",
				  sqlite3_errmsg(db));
		goto out;
	}
	buf = strdup("");
	if (!buf) {
		rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				  "out of memory");
		goto out;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *rec = (const char *)sqlite3_column_text(st, 2);
		json_t *j = rec ? json_loads(rec, 0, NULL) : NULL;
		char *line = NULL;
		if (j) {
			json_object_set_new(
				j, "prev_hash",
				json_string((const char *)sqlite3_column_text(
					st, 0)));
			json_object_set_new(
				j, "hash",
				json_string((const char *)sqlite3_column_text(
					st, 1)));
			line = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
			json_decref(j);
		}
		if (!line)
			continue; /* an unreadable row: verify reports it */
		size_t ll = strlen(line);
		char *nb = realloc(buf, len + ll + 2);
		if (!nb) {
			free(line);
			rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
					  "out of memory");
			goto out;
		}
		buf = nb;
		memcpy(buf + len, line, ll);
		buf[len + ll] = '\n';
		buf[len + ll + 1] = '\0';
		len += ll + 1;
		free(line);
	}
	*json_lines_out = buf;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}
