/* The SQLite store: the fleet's queue, results, events, controls, node
 * leases and audit chain in one database file that the airlockd nodes of
 * ONE host share (docs/scale-out.md, "One host: SQLite").
 *
 * Every change is a BEGIN IMMEDIATE transaction: SQLite's one write lock
 * serialises them across the nodes' processes, so a claim reads the
 * tenants' running counts as they are when it commits (there is no SKIP
 * LOCKED to need), and an audit record is chained inside the transaction
 * that makes its change (the lock it would need is already held).  There
 * is no LISTEN/NOTIFY: each change bumps a counter row that one watcher
 * thread per process polls every POLL_MS, with the count of wake-ups
 * addressed to its node (a queued run wakes one node that can take it,
 * see wake); waiters sleep on a condition it broadcasts, and a node's own
 * changes wake its waiters at once. */
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sqlite3.h>

#include "core/log.h"
#include "core/util.h"
#include "store/store_common.h"

typedef struct al_migration {
	int version;
	const char *name;
	const char *sql;
} al_migration;

#include "store_sqlite_migrations.inc"

#define POOL_MAX 16
/* How often a node looks for other nodes' changes: the wake-up latency
 * that LISTEN/NOTIFY gives PostgreSQL nodes. */
#define POLL_MS 20
/* How long a transaction waits for the write lock before the operation
 * answers -EAGAIN (a submission then answers 503). */
#define BUSY_MS 10000

int al_store_sqlite_open(const char *url, bool create, al_store **out,
			 al_error **err);

typedef struct sq_store {
	al_store base;
	char *path;
	pthread_mutex_t lock;
	pthread_cond_t freed, notice, tick;
	sqlite3 *idle[POOL_MAX];
	unsigned n_idle, n_open;
	pthread_t watcher;
	bool watching, closing;
	uint64_t notices, queued; /* any change; wake-ups of our claimer */
	/* set_self: this node ("" none: every wake-up is ours), and how
	 * recent a heartbeat makes a node live */
	char self[64];
	uint64_t lease_ms;
} sq_store;

static int sq_err(int r)
{
	switch (r & 0xff) {
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EAGAIN;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_FULL:
		return -ENOSPC;
	default:
		return -EIO;
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- connections ----------------------------------------------------- */

/* SQLite's own busy handler sleeps longer and longer (up to 100 ms) while
 * the write lock is taken, so with several nodes contending a waiter
 * often sleeps well past the lock's release.  Transactions here hold it
 * for a commit or so: look again every millisecond, up to BUSY_MS. */
static int busy_wait(void *ctx, int count)
{
	(void)ctx;
	if (count >= BUSY_MS)
		return 0;
	struct timespec ts = {0, 1000 * 1000};
	nanosleep(&ts, NULL);
	return 1;
}

static int conn_open(const char *path, sqlite3 **out)
{
	sqlite3 *c = NULL;
	*out = NULL;
	int r = sqlite3_open_v2(path, &c,
				SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
					SQLITE_OPEN_NOFOLLOW,
				NULL);
	if (r == SQLITE_OK) {
		sqlite3_busy_handler(c, busy_wait, NULL);
		r = sqlite3_exec(c,
				 "PRAGMA foreign_keys = ON; "
				 "PRAGMA synchronous = FULL",
				 NULL, NULL, NULL);
	}
	if (r != SQLITE_OK) {
		sqlite3_close(c);
		return sq_err(r);
	}
	*out = c;
	return 0;
}

static int conn_get(sq_store *s, sqlite3 **out)
{
	pthread_mutex_lock(&s->lock);
	while (s->n_idle == 0 && s->n_open >= POOL_MAX)
		pthread_cond_wait(&s->freed, &s->lock);
	if (s->n_idle > 0) {
		*out = s->idle[--s->n_idle];
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	s->n_open++;
	pthread_mutex_unlock(&s->lock);
	int rc = conn_open(s->path, out);
	if (rc < 0) {
		pthread_mutex_lock(&s->lock);
		s->n_open--;
		pthread_cond_signal(&s->freed);
		pthread_mutex_unlock(&s->lock);
	}
	return rc;
}

static void conn_put(sq_store *s, sqlite3 *c)
{
	pthread_mutex_lock(&s->lock);
	s->idle[s->n_idle++] = c;
	pthread_cond_signal(&s->freed);
	pthread_mutex_unlock(&s->lock);
}

typedef int (*body_fn)(sq_store *s, sqlite3 *c, void *args);

/* Runs body on a pooled connection; a transaction it left open (a
 * failure part way) is rolled back. */
static int with_conn(sq_store *s, body_fn body, void *args)
{
	sqlite3 *c;
	int rc = conn_get(s, &c);
	if (rc < 0)
		return rc;
	rc = body(s, c, args);
	if (!sqlite3_get_autocommit(c))
		(void)sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
	conn_put(s, c);
	return rc;
}

/* ---- statements ------------------------------------------------------ */

/* Prepares sql and binds fmt's parameters in order: 't' text (NULL binds
 * NULL), 'i' an int64_t, 'b' a blob (a pointer, then a size_t).  NULL on
 * failure (the connection has the error). */
static sqlite3_stmt *vprep(sqlite3 *c, const char *sql, const char *fmt,
			   va_list ap)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(c, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	int r = SQLITE_OK;
	for (int i = 0; fmt[i] != '\0' && r == SQLITE_OK; i++) {
		if (fmt[i] == 't') {
			r = sqlite3_bind_text(st, i + 1, va_arg(ap, const char *),
					      -1, SQLITE_STATIC);
		} else if (fmt[i] == 'i') {
			r = sqlite3_bind_int64(st, i + 1, va_arg(ap, int64_t));
		} else if (fmt[i] == 'b') {
			const void *p = va_arg(ap, const void *);
			size_t n = va_arg(ap, size_t);
			/* A NULL pointer would bind NULL, not an empty blob. */
			r = sqlite3_bind_blob64(st, i + 1, p != NULL ? p : "",
						n, SQLITE_STATIC);
		} else {
			r = SQLITE_MISUSE;
		}
	}
	if (r != SQLITE_OK) {
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

static sqlite3_stmt *prep(sqlite3 *c, const char *sql, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sqlite3_stmt *st = vprep(c, sql, fmt, ap);
	va_end(ap);
	return st;
}

static int fail(sqlite3 *c)
{
	int r = sqlite3_errcode(c);
	return sq_err(r == SQLITE_OK ? SQLITE_ERROR : r);
}

/* A statement without rows: the number of rows it changed, or a negative
 * errno. */
/* Write transactions this process committed (a node opens one store):
 * each is an fsync of the host's one writer, the store's cost per run
 * (logged at close, read by bench/fleet.py). */
static _Atomic unsigned long long commits;

static int run(sqlite3 *c, const char *sql, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sqlite3_stmt *st = vprep(c, sql, fmt, ap);
	va_end(ap);
	if (st == NULL)
		return fail(c);
	int r = sqlite3_step(st);
	sqlite3_finalize(st);
	int n = r == SQLITE_DONE ? sqlite3_changes(c) : sq_err(r);
	/* A change outside BEGIN is its own transaction (a hint). */
	if (n > 0 && sqlite3_get_autocommit(c))
		commits++;
	return n;
}

/* Steps st to its end, finalizes it, and gives each row as a JSON array
 * of its columns (strings, integers, null): 0 or a negative errno. */
static int collect(sqlite3_stmt *st, json_t **rows)
{
	json_t *all = json_array();
	int r = SQLITE_DONE, rc = all != NULL ? 0 : -ENOMEM;
	while (rc == 0 && (r = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *row = json_array();
		int n = sqlite3_column_count(st);
		for (int i = 0; row != NULL && i < n; i++) {
			json_t *v;
			switch (sqlite3_column_type(st, i)) {
			case SQLITE_NULL:
				v = json_null();
				break;
			case SQLITE_INTEGER:
				v = json_integer(sqlite3_column_int64(st, i));
				break;
			default:
				v = json_stringn(
					(const char *)sqlite3_column_text(st, i),
					(size_t)sqlite3_column_bytes(st, i));
			}
			if (v == NULL || json_array_append_new(row, v) < 0) {
				json_decref(row);
				row = NULL;
			}
		}
		if (row == NULL || json_array_append_new(all, row) < 0)
			rc = -ENOMEM;
	}
	if (rc == 0 && r != SQLITE_DONE)
		rc = sq_err(r);
	sqlite3_finalize(st);
	if (rc < 0) {
		json_decref(all);
		all = NULL;
	}
	*rows = all;
	return rc;
}

/* A query's rows (see collect); NULL args as in prep. */
static int query(sqlite3 *c, json_t **rows, const char *sql,
		 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sqlite3_stmt *st = vprep(c, sql, fmt, ap);
	va_end(ap);
	*rows = NULL;
	if (st == NULL)
		return fail(c);
	return collect(st, rows);
}

static const char *col_s(const json_t *rows, size_t row, size_t col)
{
	return json_string_value(json_array_get(json_array_get(rows, row), col));
}

static int64_t col_i(const json_t *rows, size_t row, size_t col)
{
	return json_integer_value(
		json_array_get(json_array_get(rows, row), col));
}

static int begin(sqlite3 *c)
{
	int r = sqlite3_exec(c, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	return r == SQLITE_OK ? 0 : sq_err(r);
}

static int commit(sqlite3 *c)
{
	int r = sqlite3_exec(c, "COMMIT", NULL, NULL, NULL);
	if (r == SQLITE_OK)
		commits++;
	return r == SQLITE_OK ? 0 : sq_err(r);
}

/* ---- notices --------------------------------------------------------- */

/* Inside a change's transaction: other nodes' watchers see it. */
static int notice_add(sqlite3 *c, bool queued)
{
	int n = run(c,
		    "UPDATE notices SET changes = changes + 1, queued = "
		    "queued + ?1 WHERE id = 1",
		    "i", (int64_t)(queued ? 1 : 0));
	return n < 0 ? n : 0;
}

/* Inside a change that may let a queued run be claimed: wakes one live
 * node with a free slot (its running runs against its published
 * concurrency), the freest first, that runs language (NULL: any), is
 * only (NULL: any) and is not except (NULL: none); when none has one,
 * only, or else every node.  As the PostgreSQL store's queue notices:
 * several nodes woken for one run would race for it, and the node that
 * made the change would win (its own waiters are woken at once, the
 * others' at their next poll), leaving the others idle.  who gets the
 * node woken ("*" every one), for the local wake-up after the commit. */
static int wake(sq_store *s, sqlite3 *c, const char *language,
		const char *only, const char *except, char who[64])
{
	pthread_mutex_lock(&s->lock);
	int64_t cutoff = now_ms() - (int64_t)s->lease_ms;
	pthread_mutex_unlock(&s->lock);
	json_t *rows = NULL;
	int rc = query(c, &rows,
		       "SELECT id FROM (SELECT n.id, n.concurrency - (SELECT "
		       "count(*) FROM runs r WHERE r.node = n.id AND r.state = "
		       "'running') AS free FROM nodes n WHERE n.heartbeat_ms > "
		       "?1 AND (?2 IS NULL OR EXISTS (SELECT 1 FROM json_each("
		       "n.facts, '$.languages') l WHERE l.value = ?2)) AND (?3 "
		       "IS NULL OR n.id = ?3) AND (?4 IS NULL OR n.id <> ?4)) "
		       "WHERE free > 0 ORDER BY free DESC, random() LIMIT 1",
		       "ittt", cutoff, language, only, except);
	if (rc < 0)
		return rc;
	const char *id = json_array_size(rows) == 1 ? col_s(rows, 0, 0)
			 : only != NULL			   ? only
							   : "*";
	snprintf(who, 64, "%s", id);
	json_decref(rows);
	int n = strcmp(who, "*") == 0
			? run(c,
			      "UPDATE notices SET changes = changes + 1, "
			      "queued = queued + 1 WHERE id = 1",
			      "")
			: run(c,
			      "INSERT INTO wakes (node, n) VALUES (?1, 1) ON "
			      "CONFLICT (node) DO UPDATE SET n = n + 1",
			      "t", who);
	if (n < 0)
		return n;
	return strcmp(who, "*") == 0 ? 0 : notice_add(c, false);
}

/* After a change committed: this node's waiters look at once. */
static void bump(sq_store *s, bool queued)
{
	pthread_mutex_lock(&s->lock);
	s->notices++;
	if (queued)
		s->queued++;
	pthread_cond_broadcast(&s->notice);
	pthread_mutex_unlock(&s->lock);
}

/* After a wake-up committed: this node's claimer looks at once when it
 * is the one woken. */
static void bump_woken(sq_store *s, const char *who)
{
	pthread_mutex_lock(&s->lock);
	bool us = strcmp(who, "*") == 0 || s->self[0] == '\0' ||
		  strcmp(who, s->self) == 0;
	pthread_mutex_unlock(&s->lock);
	bump(s, us);
}

/* Polls the notices row on its own connection; a change made by any
 * node wakes this process's waiters. */
static void *watch_main(void *arg)
{
	sq_store *s = arg;
	sqlite3 *c = NULL;
	sqlite3_stmt *st = NULL;
	int64_t changes = -1, queued = -1;
	char self[64];
	pthread_mutex_lock(&s->lock);
	while (!s->closing) {
		memcpy(self, s->self, sizeof(self));
		pthread_mutex_unlock(&s->lock);
		/* queued: the wake-ups of every node, and of this one (of
		 * any node while it has not named itself). */
		if (st == NULL && conn_open(s->path, &c) == 0 &&
		    sqlite3_prepare_v2(c,
				       "SELECT changes, queued + (SELECT "
				       "coalesce(sum(n), 0) FROM wakes WHERE "
				       "?1 = '' OR node = ?1) FROM notices "
				       "WHERE id = 1",
				       -1, &st, NULL) != SQLITE_OK) {
			sqlite3_finalize(st);
			st = NULL;
		}
		if (st == NULL) {
			sqlite3_close(c);
			c = NULL;
		}
		bool any = false, q = false;
		if (st != NULL &&
		    sqlite3_bind_text(st, 1, self, -1, SQLITE_TRANSIENT) ==
			    SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW) {
			int64_t ch = sqlite3_column_int64(st, 0),
				qu = sqlite3_column_int64(st, 1);
			any = changes >= 0 && ch != changes;
			q = queued >= 0 && qu != queued;
			changes = ch;
			queued = qu;
		}
		if (st != NULL)
			sqlite3_reset(st);
		pthread_mutex_lock(&s->lock);
		if (any || q) {
			s->notices++;
			if (q)
				s->queued++;
			pthread_cond_broadcast(&s->notice);
		}
		if (!s->closing) {
			struct timespec dl;
			al_deadline(CLOCK_REALTIME, &dl, POLL_MS);
			pthread_cond_timedwait(&s->tick, &s->lock, &dl);
		}
	}
	pthread_mutex_unlock(&s->lock);
	sqlite3_finalize(st);
	sqlite3_close(c);
	return NULL;
}

static void sq_wait(al_store *st, bool queue, uint64_t *seen,
		    unsigned timeout_ms)
{
	sq_store *s = (sq_store *)st;
	struct timespec dl;
	al_deadline(CLOCK_REALTIME, &dl, timeout_ms);
	pthread_mutex_lock(&s->lock);
	const uint64_t *counter = queue ? &s->queued : &s->notices;
	while (*counter == *seen && !s->closing && timeout_ms > 0)
		if (pthread_cond_timedwait(&s->notice, &s->lock, &dl) ==
		    ETIMEDOUT)
			break;
	*seen = *counter;
	pthread_mutex_unlock(&s->lock);
}

/* ---- the audit chain ------------------------------------------------- */

/* Appends one record to the chain inside the caller's transaction (which
 * holds the write lock, so the head read here stays the head): the
 * record canonical JSON with seq and time, hash = sha256(prev_hash ||
 * record). */
static int audit_append(sqlite3 *c, json_t *rec)
{
	char when[96], prev[65], hash[65];
	json_t *head = NULL;
	int rc = query(c, &head,
		       "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1",
		       "");
	if (rc < 0)
		return rc;
	int64_t seq = 1;
	memcpy(prev, al_store_zero_hash, sizeof(prev));
	if (json_array_size(head) == 1) {
		seq = col_i(head, 0, 0) + 1;
		snprintf(prev, sizeof(prev), "%s",
			 col_s(head, 0, 1) ? col_s(head, 0, 1) : "");
	}
	json_decref(head);
	al_store_now_text(when, sizeof(when));
	char *text = NULL;
	if (json_object_set_new(rec, "time", json_string(when)) < 0 ||
	    json_object_set_new(rec, "seq", json_integer(seq)) < 0 ||
	    (text = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS)) == NULL ||
	    al_store_chain_hash(prev, text, hash) < 0) {
		free(text);
		return -ENOMEM;
	}
	int n = run(c,
		    "INSERT INTO audit (seq, prev_hash, hash, record) VALUES "
		    "(?1, ?2, ?3, ?4)",
		    "ittt", seq, prev, hash, text);
	free(text);
	return n < 0 ? n : 0;
}

/* Records are chained as they commit: nothing is ever pending. */
static int sq_audit_chain(al_store *st)
{
	(void)st;
	return 0;
}

struct verify_args {
	uint64_t *records;
	al_error **err;
};

static int verify_body(sq_store *s, sqlite3 *c, void *a_)
{
	(void)s;
	struct verify_args *a = a_;
	al_store_chain ch;
	al_store_chain_init(&ch);
	*a->records = 0;
	/* One statement reads one snapshot of the chain. */
	sqlite3_stmt *st = prep(c,
				"SELECT seq, prev_hash, hash, record FROM "
				"audit ORDER BY seq",
				"");
	if (st == NULL)
		return fail(c);
	int r = SQLITE_DONE, rc = 0;
	while (rc == 0 && (r = sqlite3_step(st)) == SQLITE_ROW) {
		const char *ph = (const char *)sqlite3_column_text(st, 1);
		const char *h = (const char *)sqlite3_column_text(st, 2);
		const char *rec = (const char *)sqlite3_column_text(st, 3);
		rc = al_store_chain_next(&ch, sqlite3_column_int64(st, 0),
					 ph ? ph : "", h ? h : "",
					 rec ? rec : "", a->err);
	}
	if (rc == 0 && r != SQLITE_DONE)
		rc = al_error_set(a->err, AL_ERR_IO, -sq_err(r), "store",
				  "cannot read the audit chain: %s",
				  sqlite3_errstr(r));
	sqlite3_finalize(st);
	*a->records = ch.records;
	return rc;
}

static int sq_audit_verify(al_store *st, uint64_t *records, al_error **err)
{
	struct verify_args a = {records, err};
	int rc = with_conn((sq_store *)st, verify_body, &a);
	if (rc < 0)
		al_error_set(err, AL_ERR_IO, -rc, "store",
			     "cannot read the store: %s", strerror(-rc));
	return rc;
}

/* ---- enqueue --------------------------------------------------------- */

struct enq_args {
	const al_store_submit *s;
	char *existing;
};

static int enq_body(sq_store *st, sqlite3 *c, void *a_)
{
	(void)st;
	struct enq_args *a = a_;
	const al_store_submit *s = a->s;
	int64_t now = now_ms();
	int rc = begin(c);
	if (rc < 0)
		return rc;
	/* The language routes the run only when a live node can run it;
	 * otherwise any node takes it and its admission answers. */
	json_t *ins = NULL;
	rc = query(c, &ins,
			"INSERT INTO runs (id, tenant, principal, body, "
			"request_sha256, idem_key, tenant_max, state, "
			"language, created_ms, pinned, submit_nonce, "
			"traceparent) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
			"'queued', CASE WHEN EXISTS (SELECT 1 FROM nodes n, "
			"json_each(n.facts, '$.languages') l WHERE "
			"n.heartbeat_ms > ?9 AND l.value = ?8) THEN ?8 END, "
			"?10, ?11, ?12, ?13) ON CONFLICT DO NOTHING RETURNING "
			"language",
			"ttttttitiittt", s->run_id, s->tenant, s->principal,
			s->body, s->request_sha256, s->idem_key,
			(int64_t)s->tenant_max, s->language,
			now - (int64_t)s->lease_ms, now, s->pinned, s->nonce,
			s->traceparent);
	if (rc < 0)
		return rc;
	size_t added = json_array_size(ins);
	char who[64] = "*";
	/* One node that can take it is woken; a pinned run only ever its
	 * own node (it claims once a slot frees). */
	if (added == 1)
		rc = wake(st, c, col_s(ins, 0, 0), s->pinned, NULL, who);
	json_decref(ins);
	if (rc < 0)
		return rc;
	if (added == 0) {
		/* The id taken: by this very submission (a retry whose
		 * answer was lost), queued once as asked; by another, a
		 * caller-chosen id already in use. */
		json_t *rows = NULL;
		rc = query(c, &rows,
			   "SELECT tenant = ?2 AND request_sha256 = ?3 AND (?4 "
			   "IS NULL OR submit_nonce = ?4) FROM runs WHERE id = "
			   "?1",
			   "tttt", s->run_id, s->tenant, s->request_sha256,
			   s->nonce);
		size_t taken = json_array_size(rows);
		bool mine = taken == 1 && col_i(rows, 0, 0) == 1;
		json_decref(rows);
		if (rc < 0)
			return rc;
		if (taken == 1) {
			rc = commit(c);
			return rc < 0 ? rc : mine ? 0 : -EADDRINUSE;
		}
		if (s->idem_key == NULL)
			return -EIO;
		rc = query(c, &rows,
			   "SELECT id, request_sha256 FROM runs WHERE tenant = "
			   "?1 AND idem_key = ?2",
			   "tt", s->tenant, s->idem_key);
		if (rc == 0 && json_array_size(rows) == 1) {
			snprintf(a->existing, 40, "%s", col_s(rows, 0, 0));
			rc = strcmp(col_s(rows, 0, 1), s->request_sha256) == 0
				     ? 1
				     : -EEXIST;
		} else if (rc == 0) {
			rc = -EIO;
		}
		json_decref(rows);
		return rc;
	}
	json_t *rec = al_store_queued_record(s);
	if (rec == NULL)
		return -ENOMEM;
	rc = audit_append(c, rec);
	json_decref(rec);
	if (rc == 0)
		rc = commit(c);
	if (rc == 0)
		bump_woken(st, who);
	return rc;
}

static int sq_enqueue(al_store *st, const al_store_submit *s,
		      char existing[40])
{
	struct enq_args a = {s, existing};
	existing[0] = '\0';
	return with_conn((sq_store *)st, enq_body, &a);
}

/* ---- claim ----------------------------------------------------------- */

struct claim_args {
	const char *node, *languages;
	al_store_run *out;
};

static char *dup_col(const json_t *rows, size_t col)
{
	const char *v = col_s(rows, 0, col);
	return v != NULL ? strdup(v) : NULL;
}

static int claim_body(sq_store *s, sqlite3 *c, void *a_)
{
	struct claim_args *a = a_;
	json_t *rows = NULL;
	/* Nothing queued (the common case for an idle node): no write
	 * lock taken.  A run queued meanwhile wakes the claimer again. */
	int rc = query(c, &rows,
		       "SELECT 1 FROM runs WHERE state = 'queued' AND (pinned "
		       "IS NULL OR pinned = ?1) LIMIT 1",
		       "t", a->node);
	size_t any = json_array_size(rows);
	json_decref(rows);
	if (rc < 0 || any == 0)
		return rc;
	if ((rc = begin(c)) < 0)
		return rc;
	/* The heads of the tenants' queues (FIFO per tenant); the oldest
	 * head whose language this node runs (or no live node published),
	 * pinned to no other node, and whose tenant has a slot left
	 * fleet-wide.  The write lock makes the running counts the truth
	 * when this commits. */
	rc = query(c, &rows,
		   "UPDATE runs SET state = 'running', node = ?1, claimed_ms = "
		   "?3 WHERE state = 'queued' AND qseq = (SELECT r.qseq FROM "
		   "(SELECT min(qseq) AS q FROM runs WHERE state = 'queued' "
		   "GROUP BY tenant) h JOIN runs r ON r.qseq = h.q WHERE "
		   "(r.language IS NULL OR r.language IN (SELECT value FROM "
		   "json_each(?2))) AND (r.pinned IS NULL OR r.pinned = ?1) "
		   "AND (r.tenant_max = 0 OR (SELECT count(*) FROM runs x "
		   "WHERE x.tenant = r.tenant AND x.state = 'running') < "
		   "r.tenant_max) ORDER BY r.qseq LIMIT 1) RETURNING id, "
		   "tenant, principal, body, pinned IS NOT NULL, "
		   "coalesce(traceparent, '')",
		   "tti", a->node, a->languages, now_ms());
	json_t *left = NULL;
	/* Runs left queued: the claimer looks again at once, and when this
	 * node is now full another with a free slot is woken for them. */
	if (rc == 0 && json_array_size(rows) == 1)
		rc = query(c, &left,
			   "SELECT EXISTS (SELECT 1 FROM runs WHERE state = "
			   "'queued'), coalesce((SELECT concurrency <= (SELECT "
			   "count(*) FROM runs WHERE node = ?1 AND state = "
			   "'running') FROM nodes WHERE id = ?1), 0)",
			   "t", a->node);
	bool more = col_i(left, 0, 0) == 1, full = col_i(left, 0, 1) == 1;
	json_decref(left);
	char who[64] = "";
	if (rc == 0 && more && full)
		rc = wake(s, c, NULL, NULL, a->node, who);
	if (rc == 0)
		rc = commit(c);
	if (rc == 0 && who[0] != '\0')
		bump_woken(s, who);
	int n = rc == 0 ? (int)json_array_size(rows) : 0;
	if (n == 1) {
		al_store_run *o = a->out;
		snprintf(o->run_id, sizeof(o->run_id), "%s",
			 col_s(rows, 0, 0));
		snprintf(o->state, sizeof(o->state), "running");
		o->tenant = dup_col(rows, 1);
		o->principal = dup_col(rows, 2);
		o->body = dup_col(rows, 3);
		o->node = strdup(a->node);
		o->pinned = col_i(rows, 0, 4) == 1;
		const char *tp = col_s(rows, 0, 5);
		snprintf(o->traceparent, sizeof(o->traceparent), "%s",
			 tp != NULL ? tp : "");
		o->more = more;
		if (o->tenant == NULL || o->principal == NULL ||
		    o->body == NULL || o->node == NULL)
			rc = -ENOMEM;
	}
	json_decref(rows);
	return rc < 0 ? rc : n;
}

static int sq_claim(al_store *st, const char *node, const char *languages,
		    al_store_run *out)
{
	struct claim_args a = {node, languages, out};
	memset(out, 0, sizeof(*out));
	int rc = with_conn((sq_store *)st, claim_body, &a);
	if (rc < 0)
		al_store_run_clear(out);
	return rc;
}

/* ---- finish ---------------------------------------------------------- */

struct fin_args {
	const char *node, *run_id, *outcome, *result;
	unsigned status;
};

static int fin_body(sq_store *s, sqlite3 *c, void *a_)
{
	struct fin_args *a = a_;
	json_t *rows = NULL;
	int rc = begin(c);
	if (rc < 0)
		return rc;
	rc = query(c, &rows,
		   "UPDATE runs SET state = 'finished', status = ?3, outcome = "
		   "?4, result = ?5, finished_ms = ?6 WHERE id = ?1 AND node = "
		   "?2 AND state = 'running' RETURNING tenant",
		   "ttitti", a->run_id, a->node, (int64_t)a->status, a->outcome,
		   a->result, now_ms());
	if (rc < 0)
		return rc;
	if (json_array_size(rows) != 1) {
		json_decref(rows);
		rc = commit(c);
		return rc < 0 ? rc : 0;
	}
	json_t *rec = json_pack("{s:s, s:s, s:s, s:s, s:s}", "event",
				"run.finished", "run_id", a->run_id, "tenant",
				col_s(rows, 0, 0), "node", a->node, "outcome",
				a->outcome);
	json_decref(rows);
	if (rec == NULL)
		return -ENOMEM;
	/* A slot of the node and one of the tenant are free: while the
	 * tenant has runs held back by its limit, a node is woken to take
	 * one (this node's own free slot wakes its claimer without it). */
	json_t *held = NULL;
	char who[64] = "";
	rc = query(c, &held,
		   "SELECT 1 FROM runs WHERE state = 'queued' AND tenant = ?1 "
		   "LIMIT 1",
		   "t", json_string_value(json_object_get(rec, "tenant")));
	size_t n_held = json_array_size(held);
	json_decref(held);
	if (rc == 0)
		rc = n_held == 1 ? wake(s, c, NULL, NULL, NULL, who)
				 : notice_add(c, false);
	if (rc == 0)
		rc = audit_append(c, rec);
	json_decref(rec);
	if (rc == 0)
		rc = commit(c);
	if (rc == 0 && who[0] != '\0')
		bump_woken(s, who);
	else if (rc == 0)
		bump(s, false);
	return rc < 0 ? rc : 1;
}

static int sq_finish(al_store *st, const char *node, const char *run_id,
		     unsigned status, const char *outcome, const char *result)
{
	struct fin_args a = {node, run_id, outcome, result, status};
	return with_conn((sq_store *)st, fin_body, &a);
}

/* ---- get ------------------------------------------------------------- */

struct get_args {
	const char *tenant, *run_id;
	al_store_run *out;
};

static int get_body(sq_store *s, sqlite3 *c, void *a_)
{
	(void)s;
	struct get_args *a = a_;
	json_t *rows = NULL;
	int rc = query(c, &rows,
		       "SELECT state, node, coalesce(status, 0), result, "
		       "principal FROM runs WHERE id = ?1 AND tenant = ?2",
		       "tt", a->run_id, a->tenant);
	if (rc < 0)
		return rc;
	rc = -ENOENT;
	if (json_array_size(rows) == 1) {
		al_store_run *o = a->out;
		snprintf(o->run_id, sizeof(o->run_id), "%s", a->run_id);
		snprintf(o->state, sizeof(o->state), "%s", col_s(rows, 0, 0));
		o->node = dup_col(rows, 1);
		o->status = (unsigned)col_i(rows, 0, 2);
		o->result = dup_col(rows, 3);
		o->principal = dup_col(rows, 4);
		o->tenant = strdup(a->tenant);
		rc = o->tenant == NULL ||
				     (o->node == NULL &&
				      col_s(rows, 0, 1) != NULL) ||
				     (o->result == NULL &&
				      col_s(rows, 0, 3) != NULL)
			     ? -ENOMEM
			     : 0;
	}
	json_decref(rows);
	return rc;
}

static int sq_get(al_store *st, const char *tenant, const char *run_id,
		  al_store_run *out)
{
	struct get_args a = {tenant, run_id, out};
	memset(out, 0, sizeof(*out));
	int rc = with_conn((sq_store *)st, get_body, &a);
	if (rc < 0)
		al_store_run_clear(out);
	return rc;
}

/* ---- events ---------------------------------------------------------- */

struct ev_args {
	const char *run_id;
	uint64_t seq;
	int stream;
	const unsigned char *data;
	size_t len;
	al_store_event_fn fn;
	void *ctx;
};

static int ev_append_body(sq_store *s, sqlite3 *c, void *a_)
{
	struct ev_args *a = a_;
	int rc = begin(c);
	if (rc < 0)
		return rc;
	int n = run(c,
		    "INSERT INTO events (run_id, seq, stream, data) VALUES "
		    "(?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
		    "tiib", a->run_id, (int64_t)a->seq, (int64_t)a->stream,
		    (const void *)a->data, a->len);
	rc = n < 0 ? n : notice_add(c, false);
	if (rc == 0)
		rc = commit(c);
	if (rc == 0)
		bump(s, false);
	return rc;
}

static int sq_events_append(al_store *st, const char *run_id, uint64_t seq,
			    int stream, const unsigned char *data, size_t len)
{
	if (len > INT32_MAX || seq > INT64_MAX)
		return -EFBIG;
	struct ev_args a = {run_id, seq, stream, data, len, NULL, NULL};
	return with_conn((sq_store *)st, ev_append_body, &a);
}

typedef struct ev_row {
	uint64_t seq;
	int stream;
	unsigned char *data;
	size_t len;
} ev_row;

static int ev_read_body(sq_store *s, sqlite3 *c, void *a_)
{
	(void)s;
	struct ev_args *a = a_;
	sqlite3_stmt *st = prep(c,
				"SELECT seq, stream, data FROM events WHERE "
				"run_id = ?1 AND seq >= ?2 ORDER BY seq LIMIT "
				"512",
				"ti", a->run_id,
				(int64_t)(a->seq > INT64_MAX ? INT64_MAX
							     : a->seq));
	if (st == NULL)
		return fail(c);
	/* Read first, handed over after: fn runs with no read open. */
	ev_row *rows = calloc(512, sizeof(*rows));
	size_t n = 0;
	int r = SQLITE_NOMEM, rc = 0;
	while (rows != NULL && n < 512 && (r = sqlite3_step(st)) == SQLITE_ROW) {
		ev_row *e = &rows[n];
		size_t len = (size_t)sqlite3_column_bytes(st, 2);
		e->data = malloc(len ? len : 1);
		if (e->data == NULL) {
			r = SQLITE_NOMEM;
			break;
		}
		if (len > 0)
			memcpy(e->data, sqlite3_column_blob(st, 2), len);
		e->len = len;
		e->seq = (uint64_t)sqlite3_column_int64(st, 0);
		e->stream = sqlite3_column_int(st, 1);
		n++;
	}
	if (r != SQLITE_DONE && r != SQLITE_ROW)
		rc = sq_err(r);
	sqlite3_finalize(st);
	for (size_t i = 0; i < n; i++) {
		if (rc == 0)
			rc = a->fn(a->ctx, rows[i].seq, rows[i].stream,
				   rows[i].data, rows[i].len);
		free(rows[i].data);
	}
	free(rows);
	return rc < 0 ? rc : 0;
}

static int sq_events_read(al_store *st, const char *run_id, uint64_t from,
			  al_store_event_fn fn, void *ctx)
{
	struct ev_args a = {run_id, from, 0, NULL, 0, fn, ctx};
	return with_conn((sq_store *)st, ev_read_body, &a);
}

/* ---- controls -------------------------------------------------------- */

struct ctl_args {
	const char *tenant, *run_id, *kind, *event_id, *event;
	al_store_control_fn fn;
	void *ctx;
};

static int ctl_add_body(sq_store *s, sqlite3 *c, void *a_)
{
	struct ctl_args *a = a_;
	json_t *rows = NULL;
	int rc = begin(c);
	if (rc < 0)
		return rc;
	/* Under the write lock: ordered against the run's finish. */
	rc = query(c, &rows,
		   "SELECT state FROM runs WHERE id = ?1 AND tenant = ?2", "tt",
		   a->run_id, a->tenant);
	if (rc == 0 && json_array_size(rows) != 1)
		rc = -ENOENT;
	else if (rc == 0 && strcmp(col_s(rows, 0, 0), "finished") == 0)
		rc = -EALREADY;
	json_decref(rows);
	if (rc < 0)
		return rc;
	int added = run(c,
			"INSERT INTO controls (run_id, kind, event_id, event) "
			"VALUES (?1, ?2, ?3, ?4) ON CONFLICT (run_id, "
			"event_id) DO NOTHING",
			"tttt", a->run_id, a->kind, a->event_id, a->event);
	if (added < 0)
		return added;
	if (added == 1 && (rc = notice_add(c, false)) < 0)
		return rc;
	if ((rc = commit(c)) < 0)
		return rc;
	if (added == 1)
		bump(s, false);
	return added == 1 ? 0 : 1;
}

static int sq_control_add(al_store *st, const char *tenant,
			  const char *run_id, const char *kind,
			  const char *event_id, const char *event)
{
	struct ctl_args a = {tenant, run_id, kind, event_id, event, NULL, NULL};
	return with_conn((sq_store *)st, ctl_add_body, &a);
}

static int ctl_take_body(sq_store *s, sqlite3 *c, void *a_)
{
	(void)s;
	struct ctl_args *a = a_;
	json_t *rows = NULL;
	/* Most looks find nothing: no write lock for them. */
	int rc = query(c, &rows,
		       "SELECT 1 FROM controls WHERE run_id = ?1 AND NOT done "
		       "LIMIT 1",
		       "t", a->run_id);
	size_t any = json_array_size(rows);
	json_decref(rows);
	if (rc < 0 || any == 0)
		return rc;
	if ((rc = begin(c)) < 0)
		return rc;
	rc = query(c, &rows,
		   "SELECT kind, event_id, event FROM controls WHERE run_id = "
		   "?1 AND NOT done ORDER BY id",
		   "t", a->run_id);
	int n = rc == 0 ? run(c,
			      "UPDATE controls SET done = 1 WHERE run_id = ?1 "
			      "AND NOT done",
			      "t", a->run_id)
			: rc;
	rc = n < 0 ? n : commit(c);
	for (size_t i = 0; rc == 0 && i < json_array_size(rows); i++)
		a->fn(a->ctx, col_s(rows, i, 0), col_s(rows, i, 1),
		      col_s(rows, i, 2));
	json_decref(rows);
	return rc;
}

static int sq_control_take(al_store *st, const char *run_id,
			   al_store_control_fn fn, void *ctx)
{
	struct ctl_args a = {NULL, run_id, NULL, NULL, NULL, fn, ctx};
	return with_conn((sq_store *)st, ctl_take_body, &a);
}

/* ---- nodes ----------------------------------------------------------- */

static int hb_body(sq_store *s, sqlite3 *c, void *a_)
{
	(void)s;
	const al_store_node *n = a_;
	int rc = begin(c);
	if (rc < 0)
		return rc;
	int x = run(c,
		    "INSERT INTO nodes (id, host, started_ms, heartbeat_ms, "
		    "concurrency, in_use, facts) VALUES (?1, ?2, ?3, ?3, ?4, "
		    "?5, ?6) ON CONFLICT (id) DO UPDATE SET host = "
		    "excluded.host, heartbeat_ms = excluded.heartbeat_ms, "
		    "concurrency = excluded.concurrency, in_use = "
		    "excluded.in_use, facts = excluded.facts",
		    "ttiiit", n->id, n->host, now_ms(), (int64_t)n->concurrency,
		    (int64_t)n->in_use, n->facts);
	return x < 0 ? x : commit(c);
}

static int sq_heartbeat(al_store *st, const al_store_node *n)
{
	return with_conn((sq_store *)st, hb_body, (void *)n);
}

struct reap_args {
	const char *self;
	uint64_t lease_ms;
	const char *dead;
};

/* Whether some node other than self whose lease ran out still has
 * running runs: most heartbeats find none and take no write lock. */
static int dead_runs(sqlite3 *c, const char *self, int64_t cutoff,
		     bool queued)
{
	json_t *rows = NULL;
	int rc = query(c, &rows,
		       "SELECT 1 FROM runs r JOIN nodes d ON d.id = "
		       "CASE r.state WHEN 'running' THEN r.node WHEN 'queued' "
		       "THEN r.pinned END WHERE (r.state = 'running' OR (?3 "
		       "AND r.state = 'queued')) AND d.id <> ?1 AND "
		       "d.heartbeat_ms < ?2 LIMIT 1",
		       "tii", self, cutoff, (int64_t)queued);
	size_t n = json_array_size(rows);
	json_decref(rows);
	return rc < 0 ? rc : (int)n;
}

static int reap_body(sq_store *s, sqlite3 *c, void *a_)
{
	struct reap_args *a = a_;
	json_t *rows = NULL;
	int64_t now = now_ms();
	int rc = dead_runs(c, a->self, now - (int64_t)a->lease_ms, true);
	if (rc <= 0 || (rc = begin(c)) < 0)
		return rc;
	/* One UPDATE settles each run at most once.  A dead node with a
	 * live node of its host and boot is left to that node's adoption.
	 * A queued run pinned to a dead node is lost whatever its host:
	 * what it needed was in that node's memory.  Only the nodes the
	 * caller found dead are settled. */
	rc = query(c, &rows,
		   "WITH gone AS (SELECT value AS id FROM json_each(?4)) "
		   "UPDATE runs SET state = 'finished', status = 503, outcome "
		   "= 'unavailable', finished_ms = ?3, result = json_object("
		   "'run_id', id, 'outcome', 'unavailable', 'reason', 'lost', "
		   "'detail', 'node_lost') WHERE state = 'running' AND node IN "
		   "(SELECT d.id FROM nodes d WHERE d.id <> ?1 AND "
		   "d.heartbeat_ms < ?2 AND d.id IN (SELECT id FROM gone) AND "
		   "NOT EXISTS (SELECT 1 FROM nodes l WHERE l.heartbeat_ms >= ?2 "
		   "AND l.host = d.host AND json_extract(l.facts, '$.boot_id') "
		   "= json_extract(d.facts, '$.boot_id'))) OR (state = 'queued' "
		   "AND pinned IN (SELECT id FROM nodes WHERE id <> ?1 AND "
		   "heartbeat_ms < ?2 AND id IN (SELECT id FROM gone))) "
		   "RETURNING id, tenant, coalesce(node, pinned)",
		   "tiit", a->self, now - (int64_t)a->lease_ms, now, a->dead);
	if (rc < 0)
		return rc;
	size_t n = json_array_size(rows);
	for (size_t i = 0; i < n && rc == 0; i++) {
		json_t *rec = al_store_lost_record(
			col_s(rows, i, 0), col_s(rows, i, 1), col_s(rows, i, 2),
			"node_lost");
		rc = rec == NULL ? -ENOMEM : audit_append(c, rec);
		json_decref(rec);
	}
	json_decref(rows);
	if (rc == 0 && n > 0)
		rc = notice_add(c, true);
	if (rc == 0)
		rc = commit(c);
	if (rc == 0 && n > 0)
		bump(s, true);
	return rc < 0 ? rc : (int)n;
}

static int sq_reap(al_store *st, const char *self, uint64_t lease_ms,
		   const char *dead)
{
	struct reap_args a = {self, lease_ms, dead};
	return with_conn((sq_store *)st, reap_body, &a);
}

struct lapsed_args {
	const char *self;
	uint64_t lease_ms;
	al_store_node_fn fn;
	void *ctx;
};

static int lapsed_body(sq_store *s, sqlite3 *c, void *a_)
{
	(void)s;
	struct lapsed_args *a = a_;
	json_t *rows = NULL;
	int rc = query(c, &rows,
		       "SELECT d.id, d.facts FROM nodes d WHERE d.id <> ?1 AND "
		       "d.heartbeat_ms < ?2 AND (EXISTS (SELECT 1 FROM runs r "
		       "WHERE r.state = 'running' AND r.node = d.id) OR EXISTS "
		       "(SELECT 1 FROM runs r WHERE r.state = 'queued' AND "
		       "r.pinned = d.id)) ORDER BY d.id",
		       "ti", a->self, now_ms() - (int64_t)a->lease_ms);
	for (size_t i = 0; rc == 0 && i < json_array_size(rows); i++)
		a->fn(a->ctx, col_s(rows, i, 0), col_s(rows, i, 1));
	json_decref(rows);
	return rc < 0 ? rc : 0;
}

static int sq_lapsed(al_store *st, const char *self, uint64_t lease_ms,
		     al_store_node_fn fn, void *ctx)
{
	struct lapsed_args a = {self, lease_ms, fn, ctx};
	return with_conn((sq_store *)st, lapsed_body, &a);
}

struct adopt_args {
	const char *self, *host, *boot_id;
	uint64_t lease_ms;
	const char *dead;
	al_store_adopt_fn fn;
	void *ctx;
};

static int adopt_body(sq_store *s, sqlite3 *c, void *a_)
{
	(void)s;
	struct adopt_args *a = a_;
	json_t *rows = NULL;
	int64_t cutoff = now_ms() - (int64_t)a->lease_ms;
	int rc = dead_runs(c, a->self, cutoff, false);
	if (rc <= 0 || (rc = begin(c)) < 0)
		return rc;
	/* The dead node's state directory stays the first adopter's across
	 * a second adoption. */
	rc = query(c, &rows,
		   "SELECT r.id, r.tenant, d.id, coalesce(r.adopted_dir, "
		   "json_extract(d.facts, '$.state_dir'), '') FROM runs r JOIN "
		   "nodes d ON d.id = r.node WHERE r.state = 'running' AND "
		   "d.id <> ?1 AND d.host = ?2 AND json_extract(d.facts, "
		   "'$.boot_id') = ?3 AND d.heartbeat_ms < ?4 AND d.id IN "
		   "(SELECT value FROM json_each(?5)) ORDER BY r.qseq",
		   "tttit", a->self, a->host, a->boot_id, cutoff, a->dead);
	if (rc < 0)
		return rc;
	size_t n = json_array_size(rows);
	for (size_t i = 0; i < n && rc == 0; i++) {
		int x = run(c,
			    "UPDATE runs SET node = ?1, adopted_dir = ?2 WHERE "
			    "id = ?3 AND state = 'running'",
			    "ttt", a->self, col_s(rows, i, 3),
			    col_s(rows, i, 0));
		json_t *rec = x < 0 ? NULL
				    : json_pack("{s:s, s:s, s:s, s:s, s:s}",
						"event", "run.adopted",
						"run_id", col_s(rows, i, 0),
						"tenant", col_s(rows, i, 1),
						"node", a->self, "from",
						col_s(rows, i, 2));
		rc = x < 0 ? x : rec == NULL ? -ENOMEM : audit_append(c, rec);
		json_decref(rec);
	}
	if (rc == 0)
		rc = commit(c);
	for (size_t i = 0; i < n && rc == 0; i++)
		a->fn(a->ctx, col_s(rows, i, 0), col_s(rows, i, 1),
		      col_s(rows, i, 3));
	json_decref(rows);
	return rc < 0 ? rc : (int)n;
}

static int sq_adopt(al_store *st, const char *self, const char *host,
		    const char *boot_id, uint64_t lease_ms,
		    const char *dead, al_store_adopt_fn fn, void *ctx)
{
	struct adopt_args a = {self, host, boot_id, lease_ms, dead, fn,
			       ctx};
	return with_conn((sq_store *)st, adopt_body, &a);
}

static int requeue_body(sq_store *s, sqlite3 *c, void *a_)
{
	const char *const *v = a_;
	int rc = begin(c);
	if (rc < 0)
		return rc;
	int n = run(c,
		    "UPDATE runs SET state = 'queued', node = NULL, claimed_ms "
		    "= NULL WHERE id = ?2 AND node = ?1 AND state = 'running' "
		    "AND adopted_dir IS NULL",
		    "tt", v[0], v[1]);
	rc = n < 0 ? n : n == 1 ? notice_add(c, true) : 0;
	if (rc == 0)
		rc = commit(c);
	if (rc == 0 && n == 1)
		bump(s, true);
	return rc < 0 ? rc : n;
}

static int sq_requeue(al_store *st, const char *node, const char *run_id)
{
	const char *v[] = {node, run_id};
	return with_conn((sq_store *)st, requeue_body, (void *)v);
}

struct orphan_args {
	const char *node;
	al_store_orphan_fn fn;
	void *ctx;
};

static int orphan_body(sq_store *s, sqlite3 *c, void *a_)
{
	(void)s;
	struct orphan_args *a = a_;
	json_t *rows = NULL;
	int rc = query(c, &rows,
		       "SELECT id, tenant, adopted_dir FROM runs WHERE node = "
		       "?1 AND state = 'running' ORDER BY qseq",
		       "t", a->node);
	for (size_t i = 0; rc == 0 && i < json_array_size(rows); i++)
		a->fn(a->ctx, col_s(rows, i, 0), col_s(rows, i, 1),
		      col_s(rows, i, 2));
	json_decref(rows);
	return rc;
}

static int sq_orphans(al_store *st, const char *node, al_store_orphan_fn fn,
		      void *ctx)
{
	struct orphan_args a = {node, fn, ctx};
	return with_conn((sq_store *)st, orphan_body, &a);
}

/* ---- pinned runs, listing, wake-ups ---------------------------------- */

static int lose_pinned_body(sq_store *s, sqlite3 *c, void *a_)
{
	const char *node = a_;
	json_t *rows = NULL;
	int rc = begin(c);
	if (rc < 0)
		return rc;
	rc = query(c, &rows,
		   "UPDATE runs SET state = 'finished', status = 503, outcome "
		   "= 'unavailable', finished_ms = ?2, result = json_object("
		   "'run_id', id, 'outcome', 'unavailable', 'reason', 'lost', "
		   "'detail', 'forwarded_env_lost') WHERE state = 'queued' AND "
		   "pinned = ?1 RETURNING id, tenant",
		   "ti", node, now_ms());
	if (rc < 0)
		return rc;
	size_t n = json_array_size(rows);
	for (size_t i = 0; i < n && rc == 0; i++) {
		json_t *rec = al_store_lost_record(
			col_s(rows, i, 0), col_s(rows, i, 1), node,
			"forwarded_env_lost");
		rc = rec == NULL ? -ENOMEM : audit_append(c, rec);
		json_decref(rec);
	}
	json_decref(rows);
	if (rc == 0 && n > 0)
		rc = notice_add(c, false);
	if (rc == 0)
		rc = commit(c);
	if (rc == 0 && n > 0)
		bump(s, false);
	return rc < 0 ? rc : (int)n;
}

static int sq_lose_pinned(al_store *st, const char *node)
{
	return with_conn((sq_store *)st, lose_pinned_body, (void *)node);
}

static int lang_body(sq_store *s, sqlite3 *c, void *a_)
{
	(void)s;
	const char *const *v = a_;
	/* One statement, its own transaction; no notice: a hint for
	 * listing that no waiter waits for. */
	int n = run(c,
		    "UPDATE runs SET admitted_language = ?3 WHERE id = ?2 AND "
		    "node = ?1 AND state = 'running'",
		    "ttt", v[0], v[1], v[2]);
	return n < 0 ? n : 0;
}

static int sq_set_language(al_store *st, const char *node, const char *run_id,
			   const char *language)
{
	const char *v[] = {node, run_id, language};
	return with_conn((sq_store *)st, lang_body, (void *)v);
}

struct list_args {
	const al_store_list_query *q;
	al_store_list_fn fn;
	void *ctx;
};

static int list_body(sq_store *s, sqlite3 *c, void *a_)
{
	(void)s;
	struct list_args *a = a_;
	const al_store_list_query *lq = a->q;
	json_t *rows = NULL;
	int64_t after = INT64_MAX;
	int rc;
	if (lq->after != NULL) {
		rc = query(c, &rows,
			   "SELECT qseq FROM runs WHERE id = ?1 AND tenant = "
			   "?2",
			   "tt", lq->after, lq->tenant);
		size_t n = json_array_size(rows);
		if (n == 1)
			after = col_i(rows, 0, 0);
		json_decref(rows);
		if (rc < 0)
			return rc;
		if (n != 1)
			return -ENOENT;
	}
	/* One statement: one snapshot, read before fn sees any row. */
	rc = query(c, &rows,
		   "SELECT id, state, created_ms, CASE WHEN state = 'finished' "
		   "THEN outcome END, admitted_language FROM runs WHERE tenant "
		   "= ?1 AND qseq < ?2 AND (?3 IS NULL OR (state = 'finished' "
		   "AND outcome = ?3)) AND (?4 IS NULL OR admitted_language = "
		   "?4) AND created_ms >= ?5 AND created_ms < ?6 ORDER BY qseq "
		   "DESC LIMIT ?7",
		   "tittiii", lq->tenant, after, lq->outcome, lq->language,
		   lq->since_ms, lq->until_ms, (int64_t)lq->limit);
	for (size_t i = 0; rc == 0 && i < json_array_size(rows); i++)
		rc = a->fn(a->ctx, col_s(rows, i, 0), col_s(rows, i, 1),
			   col_i(rows, i, 2), col_s(rows, i, 3),
			   col_s(rows, i, 4));
	json_decref(rows);
	return rc < 0 ? rc : 0;
}

static int sq_list(al_store *st, const al_store_list_query *q,
		   al_store_list_fn fn, void *ctx)
{
	struct list_args a = {q, fn, ctx};
	return with_conn((sq_store *)st, list_body, &a);
}

static void sq_set_self(al_store *st, const char *node, uint64_t lease_ms)
{
	sq_store *s = (sq_store *)st;
	pthread_mutex_lock(&s->lock);
	snprintf(s->self, sizeof(s->self), "%s", node);
	s->lease_ms = lease_ms;
	pthread_mutex_unlock(&s->lock);
}

/* ---- open, migrate, close ------------------------------------------- */

static void sq_close(al_store *st)
{
	sq_store *s = (sq_store *)st;
	if (s == NULL)
		return;
	if (s->watching) {
		pthread_mutex_lock(&s->lock);
		s->closing = true;
		pthread_cond_broadcast(&s->notice);
		pthread_cond_broadcast(&s->tick);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->watcher, NULL);
	}
	for (unsigned i = 0; i < s->n_idle; i++)
		sqlite3_close(s->idle[i]);
	unsigned long long n = commits;
	if (n > 0)
		al_logf(AL_LOG_INFO, NULL,
			"fleet store: %llu write transactions", n);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->freed);
	pthread_cond_destroy(&s->notice);
	pthread_cond_destroy(&s->tick);
	free(s->path);
	free(s);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* WAL (readers beside the writer, and what several processes on one
 * host need).  Switching can meet SQLITE_BUSY without the busy handler
 * being called (nodes starting together): retried, bounded. */
static int wal_on(sqlite3 *c, al_error **err)
{
	for (unsigned waited = 0;; waited += 10) {
		sqlite3_stmt *st = NULL;
		int r = sqlite3_prepare_v2(c, "PRAGMA journal_mode = WAL", -1,
					   &st, NULL);
		if (r == SQLITE_OK)
			r = sqlite3_step(st);
		bool wal = r == SQLITE_ROW &&
			   strcmp((const char *)sqlite3_column_text(st, 0),
				  "wal") == 0;
		sqlite3_finalize(st);
		if (wal)
			return 0;
		if (r == SQLITE_ROW)
			return al_error_set(err, AL_ERR_INVALID_CONFIG, EIO,
					    "store",
					    "the store's file system does not "
					    "support SQLite's WAL mode");
		if ((r != SQLITE_BUSY && r != SQLITE_LOCKED) ||
		    waited >= BUSY_MS)
			return al_error_set(err, AL_ERR_IO, -sq_err(r), "store",
					    "cannot open the store: %s",
					    sqlite3_errmsg(c));
		sleep_ms(10);
	}
}

/* Applies the migrations this build has and the file has not, in order,
 * in one transaction under SQLite's write lock, so that nodes starting
 * together apply each once. */
static int migrate(sqlite3 *c, al_error **err)
{
	json_t *rows = NULL;
	int rc = begin(c);
	if (rc == 0)
		rc = run(c,
			 "CREATE TABLE IF NOT EXISTS schema_migrations (version "
			 "INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_ms "
			 "INTEGER NOT NULL)",
			 "");
	if (rc >= 0)
		rc = query(c, &rows,
			   "SELECT coalesce(max(version), 0) FROM "
			   "schema_migrations",
			   "");
	if (rc < 0)
		return al_error_set(err, AL_ERR_IO, -rc, "store",
				    "cannot read the schema version: %s",
				    sqlite3_errmsg(c));
	int64_t have = col_i(rows, 0, 0);
	json_decref(rows);
	int newest = 0;
	for (size_t i = 0; i < sizeof(migrations) / sizeof(migrations[0]);
	     i++)
		newest = migrations[i].version;
	if (have > newest)
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EPROTO, "store",
				    "the store's schema (version %lld) is "
				    "newer than this build's (%d)",
				    (long long)have, newest);
	for (size_t i = 0; i < sizeof(migrations) / sizeof(migrations[0]);
	     i++) {
		const al_migration *m = &migrations[i];
		if (m->version <= have)
			continue;
		int r = sqlite3_exec(c, m->sql, NULL, NULL, NULL);
		int x = r == SQLITE_OK
				? run(c,
				      "INSERT INTO schema_migrations (version, "
				      "name, applied_ms) VALUES (?1, ?2, ?3)",
				      "iti", (int64_t)m->version, m->name,
				      now_ms())
				: sq_err(r);
		if (x < 0)
			return al_error_set(err, AL_ERR_IO, -x, "store",
					    "migration %s failed: %s", m->name,
					    sqlite3_errmsg(c));
	}
	if ((rc = commit(c)) < 0)
		return al_error_set(err, AL_ERR_IO, -rc, "store",
				    "cannot commit the migrations: %s",
				    sqlite3_errmsg(c));
	return 0;
}

/* Opening an existing store only (audit verify): a file without the
 * fleet's schema — a node's own airlock.db, say — is refused, untouched. */
static int is_fleet_store(sqlite3 *c, const char *path, al_error **err)
{
	json_t *rows = NULL;
	int rc = query(c, &rows,
		       "SELECT count(*) FROM sqlite_schema WHERE type = "
		       "'table' AND name IN ('schema_migrations', 'notices', "
		       "'runs', 'audit')",
		       "");
	int64_t n = rc == 0 ? col_i(rows, 0, 0) : 0;
	json_decref(rows);
	if (rc < 0)
		return al_error_set(err, AL_ERR_IO, -rc, "store",
				    "cannot read the store %s: %s", path,
				    sqlite3_errmsg(c));
	if (n != 4)
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, "store",
				    "%s is not a fleet store", path);
	return 0;
}

static const al_store_ops sq_ops = {
	.name = "sqlite",
	.close = sq_close,
	.enqueue = sq_enqueue,
	.claim = sq_claim,
	.finish = sq_finish,
	.get = sq_get,
	.events_append = sq_events_append,
	.events_read = sq_events_read,
	.control_add = sq_control_add,
	.control_take = sq_control_take,
	.heartbeat = sq_heartbeat,
	.lapsed = sq_lapsed,
	.reap = sq_reap,
	.orphans = sq_orphans,
	.adopt = sq_adopt,
	.requeue = sq_requeue,
	.wait = sq_wait,
	.audit_verify = sq_audit_verify,
	.audit_chain = sq_audit_chain,
	.set_language = sq_set_language,
	.list = sq_list,
	.lose_pinned = sq_lose_pinned,
	.set_self = sq_set_self,
};

/* The database file and its directory are trusted like a state
 * directory: ours (or root's), not writable by others, no link — SQLite
 * makes its -wal and -shm files beside it.  create: make the file (0600)
 * and, when missing, its directory (0700). */
static int file_check(const char *path, bool create, al_error **err)
{
	char *dir = strdup(path);
	if (dir == NULL)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	char *slash = strrchr(dir, '/');
	if (slash == NULL || slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	struct stat st;
	int rc = 0;
	if (create && mkdir(dir, 0700) < 0 && errno != EEXIST)
		rc = al_error_set(err, AL_ERR_INVALID_CONFIG, errno, "store",
				  "cannot create the store's directory %s: %s",
				  dir, strerror(errno));
	if (rc == 0 &&
	    (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
	     (st.st_uid != geteuid() && st.st_uid != 0) ||
	     (st.st_mode & 022) != 0))
		rc = al_error_set(err, AL_ERR_INVALID_CONFIG, EPERM, "store",
				  "the store's directory %s must be a "
				  "directory of this user (or root), not "
				  "writable by others",
				  dir);
	free(dir);
	if (rc < 0)
		return rc;
	if (create) {
		int fd = open(path,
			      O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				      O_CLOEXEC,
			      0600);
		if (fd >= 0)
			close(fd);
	}
	if (lstat(path, &st) < 0)
		return al_error_set(err, AL_ERR_NOT_FOUND, errno, "store",
				    "no store at %s: %s", path,
				    strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) != 0)
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EPERM, "store",
				    "the store %s must be a regular file of "
				    "this user, not writable by others",
				    path);
	return 0;
}

int al_store_sqlite_open(const char *url, bool create, al_store **out,
			 al_error **err)
{
	static const char prefix[] = "sqlite://";
	*out = NULL;
	const char *path = url + sizeof(prefix) - 1;
	if (strncmp(url, prefix, sizeof(prefix) - 1) != 0 || path[0] != '/' ||
	    strlen(path) < 2 || strlen(path) >= PATH_MAX ||
	    path[strlen(path) - 1] == '/' || strchr(path, '?') != NULL ||
	    strchr(path, '#') != NULL)
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, "store",
				    "expected sqlite:///ABSOLUTE/PATH/FILE");
	int rc = file_check(path, create, err);
	if (rc < 0)
		return rc;
	sq_store *s = calloc(1, sizeof(*s));
	if (s == NULL || (s->path = strdup(path)) == NULL) {
		free(s);
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	}
	s->base.ops = &sq_ops;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->freed, NULL);
	pthread_cond_init(&s->notice, NULL);
	pthread_cond_init(&s->tick, NULL);
	sqlite3 *c = NULL;
	if ((rc = conn_open(path, &c)) < 0) {
		sq_close(&s->base);
		return al_error_set(err, AL_ERR_IO, -rc, "store",
				    "cannot open the store %s", path);
	}
	if ((!create && (rc = is_fleet_store(c, path, err)) < 0) ||
	    (rc = wal_on(c, err)) < 0 || (create && (rc = migrate(c, err)) < 0)) {
		if (!sqlite3_get_autocommit(c))
			(void)sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
		sqlite3_close(c);
		sq_close(&s->base);
		return rc;
	}
	s->idle[s->n_idle++] = c;
	s->n_open = 1;
	if (pthread_create(&s->watcher, NULL, watch_main, s) != 0) {
		sq_close(&s->base);
		return al_error_set(err, AL_ERR_INTERNAL, EAGAIN, NULL,
				    "cannot start the store's watcher");
	}
	s->watching = true;
	*out = &s->base;
	return 0;
}
