/* The PostgreSQL store (libpq): the fleet's queue, results, events,
 * controls, node leases and audit chain (docs/scale-out.md).
 *
 * Connections come from a small pool; an operation that finds its
 * connection broken (PostgreSQL restarted) drops it and is tried once more
 * on a fresh one, then answers -EAGAIN.  Every state change of a run is one
 * transaction that also appends its audit record and a NOTIFY, so a run's
 * state, its record and the wake-up of other nodes commit together.
 * One listener connection turns NOTIFY into a counter other threads wait
 * on; a notice lost while it reconnects is covered by the waiters'
 * timeouts. */
#include "store/store.h"
#include "store/store_common.h"

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <libpq-fe.h>

#include <airlock/json.h>

#include "core/util.h"

/* libpq is opened when a PostgreSQL store is, not linked: the network
 * module is in every daemon, and libpq needs some fifteen libraries
 * (OpenSSL, Kerberos, LDAP) that a daemon without a fleet would map for
 * nothing (its idle RSS, docs/performance.md). */
#define PQ_FUNCTIONS(X)                                                       \
	X(PQclear) X(PQcmdTuples) X(PQconnectdb) X(PQconsumeInput)           \
	X(PQerrorMessage) X(PQexec) X(PQexecParams) X(PQfinish) X(PQfreemem) \
	X(PQgetisnull) X(PQgetlength) X(PQgetvalue) X(PQnotifies)            \
	X(PQntuples) X(PQresultStatus) X(PQsocket) X(PQstatus)               \
	X(PQtransactionStatus)

static struct {
#define PQ_FIELD(name) __typeof__(name) *(name);
	PQ_FUNCTIONS(PQ_FIELD)
#undef PQ_FIELD
} pq;

static pthread_once_t pq_once = PTHREAD_ONCE_INIT;
static const char *pq_missing; /* what could not be loaded; NULL: none */

static void pq_load(void)
{
	void *lib = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
	if (lib == NULL) {
		pq_missing = "libpq.so.5";
		return;
	}
#define PQ_RESOLVE(name)                                                     \
	pq.name = (__typeof__(pq.name))dlsym(lib, #name);                    \
	if (pq.name == NULL && pq_missing == NULL)                           \
		pq_missing = #name;
	PQ_FUNCTIONS(PQ_RESOLVE)
#undef PQ_RESOLVE
}

/* From here on every PQ call goes through the loaded library. */
#define PQclear (pq.PQclear)
#define PQcmdTuples (pq.PQcmdTuples)
#define PQconnectdb (pq.PQconnectdb)
#define PQconsumeInput (pq.PQconsumeInput)
#define PQerrorMessage (pq.PQerrorMessage)
#define PQexec (pq.PQexec)
#define PQexecParams (pq.PQexecParams)
#define PQfinish (pq.PQfinish)
#define PQfreemem (pq.PQfreemem)
#define PQgetisnull (pq.PQgetisnull)
#define PQgetlength (pq.PQgetlength)
#define PQgetvalue (pq.PQgetvalue)
#define PQnotifies (pq.PQnotifies)
#define PQntuples (pq.PQntuples)
#define PQresultStatus (pq.PQresultStatus)
#define PQsocket (pq.PQsocket)
#define PQstatus (pq.PQstatus)
#define PQtransactionStatus (pq.PQtransactionStatus)

typedef struct al_migration {
	int version;
	const char *name;
	const char *sql;
} al_migration;

#include "store_migrations.inc"

/* Advisory lock keys: migrations, the audit chain's head, claims. */
#define LOCK_MIGRATE 7400
#define LOCK_AUDIT 7401
#define LOCK_CLAIM 7402
#define POOL_MAX 16
#define CHANNEL "al_fleet"

typedef struct pg_store {
	al_store base;
	char *url;
	pthread_mutex_t lock;
	pthread_cond_t freed;
	PGconn *idle[POOL_MAX];
	unsigned n_idle, n_open;
	/* LISTEN */
	pthread_t listener;
	bool listening, closing;
	uint64_t notices, queued; /* any notice; wake-ups of our claimer */
	pthread_cond_t notice;
	/* set_self: this node ("" none: every queue notice wakes us), and
	 * how recent a heartbeat makes a node live (an interval) */
	char self[64];
	char lease[32];
} pg_store;

/* A queue notice: "q NODE" wakes NODE's claimer, "q *" every one.  The
 * node woken is a live one with a free slot (its running runs against
 * its published concurrency), the freest first; when none has one, every
 * node is woken.  Read, not kept in a counter row: a row every claim and
 * finish updated would serialise a node's finishes behind each other's
 * commit.  WAKE_SQL(cond, lease): one statement sending it, cond
 * narrowing the nodes (columns of nodes n); WAKE_SQL_OR names whom to
 * wake when no such node has a slot. */
#define WAKE_SQL_OR(cond, lease, none)                                       \
	"SELECT pg_notify('" CHANNEL "', 'q ' || coalesce((SELECT n.id FROM " \
	"nodes n, LATERAL (SELECT count(*) AS busy FROM runs r WHERE r.node " \
	"= n.id AND r.state = 'running') b WHERE n.heartbeat_at > now() - "   \
	lease "::interval AND b.busy < n.concurrency AND " cond " ORDER BY "  \
	"n.concurrency - b.busy DESC, random() LIMIT 1), " none "))"
#define WAKE_SQL(cond, lease) WAKE_SQL_OR(cond, lease, "'*'")

static void lease_of(pg_store *s, char out[32])
{
	pthread_mutex_lock(&s->lock);
	memcpy(out, s->lease, 32);
	pthread_mutex_unlock(&s->lock);
}

static const char zero_hash[65] =
	"0000000000000000000000000000000000000000000000000000000000000000";

void al_store_run_clear(al_store_run *r)
{
	free(r->node);
	free(r->tenant);
	free(r->principal);
	free(r->body);
	free(r->result);
	memset(r, 0, sizeof(*r));
}

static PGconn *connect_quiet(const char *url)
{
	PGconn *c = PQconnectdb(url);
	if (c != NULL && PQstatus(c) != CONNECTION_OK) {
		PQfinish(c);
		return NULL;
	}
	return c;
}

static PGconn *conn_get(pg_store *s)
{
	pthread_mutex_lock(&s->lock);
	while (s->n_idle == 0 && s->n_open >= POOL_MAX)
		pthread_cond_wait(&s->freed, &s->lock);
	if (s->n_idle > 0) {
		PGconn *c = s->idle[--s->n_idle];
		pthread_mutex_unlock(&s->lock);
		return c;
	}
	s->n_open++;
	pthread_mutex_unlock(&s->lock);
	PGconn *c = connect_quiet(s->url);
	if (c == NULL) {
		pthread_mutex_lock(&s->lock);
		s->n_open--;
		pthread_cond_signal(&s->freed);
		pthread_mutex_unlock(&s->lock);
	}
	return c;
}

static void conn_put(pg_store *s, PGconn *c)
{
	bool broken = PQstatus(c) != CONNECTION_OK ||
		      PQtransactionStatus(c) != PQTRANS_IDLE;
	if (broken)
		PQfinish(c);
	pthread_mutex_lock(&s->lock);
	if (broken)
		s->n_open--;
	else
		s->idle[s->n_idle++] = c;
	pthread_cond_signal(&s->freed);
	pthread_mutex_unlock(&s->lock);
}

typedef int (*body_fn)(PGconn *c, void *args);

/* Runs body on a pooled connection; once more on a fresh one when the
 * first turned out broken. */
static int with_conn(pg_store *s, body_fn body, void *args)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		PGconn *c = conn_get(s);
		if (c == NULL)
			return -EAGAIN;
		int rc = body(c, args);
		bool broken = PQstatus(c) != CONNECTION_OK;
		if (!broken && PQtransactionStatus(c) != PQTRANS_IDLE) {
			PGresult *r = PQexec(c, "ROLLBACK");
			PQclear(r);
		}
		conn_put(s, c);
		if (!broken)
			return rc;
	}
	return -EAGAIN;
}

/* A statement with text parameters; NULL (and the connection's error)
 * unless it succeeded. */
static PGresult *q(PGconn *c, const char *sql, int n,
		   const char *const *vals)
{
	PGresult *r = PQexecParams(c, sql, n, NULL, vals, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(r);
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		PQclear(r);
		return NULL;
	}
	return r;
}

static int cmd(PGconn *c, const char *sql)
{
	PGresult *r = q(c, sql, 0, NULL);
	if (r == NULL)
		return PQstatus(c) == CONNECTION_OK ? -EIO : -EAGAIN;
	PQclear(r);
	return 0;
}

/* A script of several statements (a migration): PQexec, no parameters. */
static int script(PGconn *c, const char *sql)
{
	PGresult *r = PQexec(c, sql);
	int rc = PQresultStatus(r) == PGRES_COMMAND_OK ||
				 PQresultStatus(r) == PGRES_TUPLES_OK
			 ? 0
			 : -EIO;
	PQclear(r);
	return rc;
}

static int fail(PGconn *c)
{
	return PQstatus(c) == CONNECTION_OK ? -EIO : -EAGAIN;
}

static char *dup_or_null(PGresult *r, int row, int col)
{
	return PQgetisnull(r, row, col) ? NULL : strdup(PQgetvalue(r, row, col));
}

static int commit(PGconn *c)
{
	return cmd(c, "COMMIT");
}

/* Adds one audit record inside the caller's transaction, so the record
 * commits exactly when the change it describes does.  It goes to
 * audit_pending without any lock; chain_body moves it into the chain
 * (seq, hash) shortly after. */
static int audit_append(PGconn *c, json_t *rec)
{
	char when[96];
	al_store_now_text(when, sizeof(when));
	if (json_object_set_new(rec, "time", json_string(when)) < 0)
		return -ENOMEM;
	char *text = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
	if (text == NULL)
		return -ENOMEM;
	const char *v[] = {text};
	PGresult *r = q(c, "INSERT INTO audit_pending (record) VALUES ($1)", 1,
			v);
	free(text);
	if (r == NULL)
		return fail(c);
	PQclear(r);
	return 0;
}

/* hash = sha256(prev_hash || record), both as text. */
static int chain_hash(const char *prev, const char *text, char hash[65])
{
	size_t tl = strlen(text);
	char *cat = malloc(64 + tl + 1);
	if (cat == NULL)
		return -ENOMEM;
	memcpy(cat, prev, 64);
	memcpy(cat + 64, text, tl + 1);
	al_sha256_hex(cat, 64 + tl, hash);
	free(cat);
	return 0;
}

/* Moves up to a batch of pending records into the chain, in one
 * transaction under the chain's lock (tried, not waited for: another node
 * chaining is as good): each gets the next seq, the record canonical
 * JSON with seq added, hash = sha256(prev_hash || record).  The rows
 * moved are exactly the rows read (a record committed meanwhile waits
 * for the next batch).  Returns the number chained. */
static int chain_body(PGconn *c, void *a_)
{
	(void)a_;
	int rc;
	if ((rc = cmd(c, "BEGIN")) < 0)
		return rc;
	PGresult *r = q(c, "SELECT pg_try_advisory_xact_lock(7401)", 0, NULL);
	if (r == NULL)
		return fail(c);
	bool locked = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	if (!locked) {
		rc = commit(c);
		return rc < 0 ? rc : 0;
	}
	PGresult *p = q(c,
			"SELECT id, record FROM audit_pending ORDER BY id "
			"LIMIT 1000",
			0, NULL);
	if (p == NULL)
		return fail(c);
	int n = PQntuples(p);
	char prev[65];
	int64_t seq = 1;
	memcpy(prev, zero_hash, sizeof(prev));
	r = n > 0 ? q(c, "SELECT seq, hash FROM audit ORDER BY seq DESC "
			 "LIMIT 1",
		      0, NULL)
		  : NULL;
	if (n > 0 && r == NULL) {
		PQclear(p);
		return fail(c);
	}
	if (r != NULL && PQntuples(r) == 1) {
		seq = strtoll(PQgetvalue(r, 0, 0), NULL, 10) + 1;
		snprintf(prev, sizeof(prev), "%s", PQgetvalue(r, 0, 1));
	}
	PQclear(r);
	/* Rows as arrays: one INSERT and one DELETE for the batch. */
	json_t *seqs = json_array(), *prevs = json_array(),
	       *hashes = json_array(), *recs = json_array(),
	       *ids = json_array();
	rc = seqs && prevs && hashes && recs && ids ? 0 : -ENOMEM;
	for (int i = 0; i < n && rc == 0; i++, seq++) {
		json_t *rec = json_loads(PQgetvalue(p, i, 1), 0, NULL);
		char *text = NULL, hash[65];
		if (rec == NULL ||
		    json_object_set_new(rec, "seq", json_integer(seq)) < 0 ||
		    (text = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS)) ==
			    NULL ||
		    chain_hash(prev, text, hash) < 0)
			rc = -ENOMEM;
		if (rc == 0 &&
		    (json_array_append_new(seqs, json_integer(seq)) < 0 ||
		     json_array_append_new(prevs, json_string(prev)) < 0 ||
		     json_array_append_new(hashes, json_string(hash)) < 0 ||
		     json_array_append_new(recs, json_string(text)) < 0 ||
		     json_array_append_new(
			     ids, json_integer(strtoll(PQgetvalue(p, i, 0),
						       NULL, 10))) < 0))
			rc = -ENOMEM;
		memcpy(prev, hash, sizeof(prev));
		free(text);
		json_decref(rec);
	}
	PQclear(p);
	char *t[5] = {NULL};
	json_t *arrs[5] = {seqs, prevs, hashes, recs, ids};
	for (int i = 0; i < 5 && rc == 0; i++)
		if ((t[i] = json_dumps(arrs[i], JSON_COMPACT)) == NULL)
			rc = -ENOMEM;
	if (rc == 0 && n > 0) {
		const char *v[] = {t[0], t[1], t[2], t[3]};
		PGresult *x = q(c,
				"INSERT INTO audit (seq, prev_hash, hash, "
				"record) SELECT * FROM unnest("
				"ARRAY(SELECT json_array_elements_text($1::json)"
				"::bigint), ARRAY(SELECT "
				"json_array_elements_text($2::json)), ARRAY("
				"SELECT json_array_elements_text($3::json)), "
				"ARRAY(SELECT json_array_elements_text("
				"$4::json)))",
				4, v);
		const char *w[] = {t[4]};
		PGresult *y = x != NULL
				      ? q(c,
					  "DELETE FROM audit_pending WHERE id "
					  "IN (SELECT json_array_elements_text("
					  "$1::json)::bigint)",
					  1, w)
				      : NULL;
		if (x == NULL || y == NULL)
			rc = fail(c);
		PQclear(x);
		PQclear(y);
	}
	for (int i = 0; i < 5; i++) {
		free(t[i]);
		json_decref(arrs[i]);
	}
	if (rc == 0)
		rc = commit(c);
	return rc < 0 ? rc : n;
}

static int pg_audit_chain(al_store *st)
{
	return with_conn((pg_store *)st, chain_body, NULL);
}

static int notify(PGconn *c, const char *what)
{
	const char *v[] = {what};
	PGresult *r = q(c, "SELECT pg_notify('" CHANNEL "', $1)", 1, v);
	if (r == NULL)
		return fail(c);
	PQclear(r);
	return 0;
}


/* ---- enqueue --------------------------------------------------------- */

struct enq_args {
	const al_store_submit *s;
	char *existing;
	char lease[32];
};

static int enq_body(PGconn *c, void *a_)
{
	struct enq_args *a = a_;
	const al_store_submit *s = a->s;
	char maxs[16], lease[32];
	int rc;
	snprintf(maxs, sizeof(maxs), "%u", s->tenant_max);
	snprintf(lease, sizeof(lease), "%" PRIu64 " milliseconds",
		 s->lease_ms);
	if ((rc = cmd(c, "BEGIN")) < 0)
		return rc;
	const char *v[] = {s->run_id,	    s->tenant,	 s->principal,
			   s->body,	    s->request_sha256, s->idem_key,
			   maxs,	    s->language, lease,
			   s->pinned,	    s->nonce,	 s->traceparent};
	/* The language routes the run only when a live node can run it;
	 * otherwise any node takes it and its admission answers. */
	PGresult *r = q(c,
			"INSERT INTO runs (id, tenant, principal, body, "
			"request_sha256, idem_key, tenant_max, state, "
			"language, pinned, submit_nonce, traceparent) VALUES "
			"($1, $2, $3, $4, $5, $6, $7, 'queued', CASE WHEN "
			"EXISTS (SELECT 1 FROM nodes WHERE heartbeat_at > "
			"now() - $9::interval AND (facts::jsonb -> "
			"'languages') ? $8::text) THEN $8::text END, $10, $11, "
			"$12) ON CONFLICT DO NOTHING RETURNING id, language",
			12, v);
	if (r == NULL)
		return fail(c);
	int added = PQntuples(r);
	char *routed = added == 1 ? dup_or_null(r, 0, 1) : NULL;
	PQclear(r);
	if (added == 1) {
		/* One node that can take it is woken (WAKE_SQL); a pinned
		 * run only ever its own node (it claims once a slot frees). */
		const char *w[] = {routed, s->pinned, a->lease};
		r = q(c,
		      WAKE_SQL_OR("($1::text IS NULL OR (n.facts::jsonb -> "
				  "'languages') ? $1::text) AND ($2::text IS "
				  "NULL OR n.id = $2::text)",
				  "$3", "coalesce($2::text, '*')"),
		      3, w);
		free(routed);
		if (r == NULL)
			return fail(c);
		PQclear(r);
	}
	if (added == 0) {
		/* This very run, committed by an attempt whose answer was
		 * lost with its connection: queued once, as asked. */
		const char *u[] = {s->run_id, s->tenant, s->request_sha256,
				   s->nonce};
		r = q(c,
		      "SELECT tenant = $2 AND request_sha256 = $3 AND ($4::text "
		      "IS NULL OR submit_nonce = $4) FROM runs WHERE id = $1",
		      4, u);
		if (r == NULL)
			return fail(c);
		int taken = PQntuples(r);
		bool mine = taken == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
		PQclear(r);
		if (taken == 1) {
			rc = commit(c);
			return rc < 0 ? rc : mine ? 0 : -EADDRINUSE;
		}
	}
	if (added == 0 && s->idem_key == NULL) {
		int crc = commit(c);
		return crc < 0 ? crc : -EIO;
	}
	if (added == 0) {
		const char *w[] = {s->tenant, s->idem_key};
		r = q(c,
		      "SELECT id, request_sha256 FROM runs WHERE tenant = $1 "
		      "AND idem_key = $2",
		      2, w);
		if (r == NULL)
			return fail(c);
		rc = -EIO;
		if (PQntuples(r) == 1) {
			snprintf(a->existing, 40, "%s", PQgetvalue(r, 0, 0));
			rc = strcmp(PQgetvalue(r, 0, 1), s->request_sha256) == 0
				     ? 1
				     : -EEXIST;
		}
		PQclear(r);
		int crc = commit(c);
		return crc < 0 ? crc : rc;
	}
	json_t *rec = al_store_queued_record(s);
	if (rec == NULL)
		return -ENOMEM;
	rc = audit_append(c, rec);
	json_decref(rec);
	if (rc == 0)
		rc = commit(c);
	return rc;
}

static int pg_enqueue(al_store *st, const al_store_submit *s,
		      char existing[40])
{
	struct enq_args a = {s, existing, ""};
	existing[0] = '\0';
	snprintf(a.lease, sizeof(a.lease), "%" PRIu64 " milliseconds",
		 s->lease_ms);
	return with_conn((pg_store *)st, enq_body, &a);
}

/* ---- claim ----------------------------------------------------------- */

struct claim_args {
	const char *node, *languages;
	al_store_run *out;
	char lease[32];
};

static int claim_body(PGconn *c, void *a_)
{
	struct claim_args *a = a_;
	int rc;
	if ((rc = cmd(c, "BEGIN")) < 0)
		return rc;
	/* Claims are serialised fleet-wide, so the running counts read
	 * here are the truth when the claim commits. */
	if ((rc = cmd(c, "SELECT pg_advisory_xact_lock(7402)")) < 0)
		return rc;
	const char *v[] = {a->node, a->languages};
	/* A tenant whose oldest queued run is in a language this node does
	 * not run is left to a node that does: FIFO per tenant holds. */
	PGresult *r = q(
		c,
		"WITH heads AS (SELECT DISTINCT ON (tenant) id, tenant, "
		"tenant_max, qseq, language, pinned FROM runs WHERE state = "
		"'queued' "
		"ORDER BY tenant, qseq), elig AS (SELECT h.id FROM heads h "
		"WHERE (h.language IS NULL OR h.language IN (SELECT "
		"json_array_elements_text($2::json))) AND (h.pinned IS NULL OR "
		"h.pinned = $1) AND (h.tenant_max = 0 "
		"OR (SELECT count(*) FROM runs x WHERE x.tenant = h.tenant AND "
		"x.state = 'running') < h.tenant_max) ORDER BY h.qseq LIMIT 1) "
		"UPDATE runs SET state = 'running', node = $1, claimed_at = "
		"now() WHERE id = (SELECT id FROM elig) AND state = 'queued' "
		"RETURNING id, tenant, principal, body, pinned IS NOT NULL, "
		"coalesce(traceparent, '')",
		2, v);
	if (r == NULL)
		return fail(c);
	int n = PQntuples(r);
	if (n == 1) {
		al_store_run *o = a->out;
		snprintf(o->run_id, sizeof(o->run_id), "%s",
			 PQgetvalue(r, 0, 0));
		snprintf(o->state, sizeof(o->state), "running");
		o->tenant = dup_or_null(r, 0, 1);
		o->principal = dup_or_null(r, 0, 2);
		o->body = dup_or_null(r, 0, 3);
		o->pinned = strcmp(PQgetvalue(r, 0, 4), "t") == 0;
		snprintf(o->traceparent, sizeof(o->traceparent), "%s",
			 PQgetvalue(r, 0, 5));
		o->node = strdup(a->node);
	}
	PQclear(r);
	if (n == 1) {
		/* While runs are left and this node is now full, another
		 * with a free slot is woken to take them (WAKE_SQL). */
		const char *w[] = {a->node, a->lease};
		r = q(c,
		      "WITH m AS (SELECT EXISTS (SELECT 1 FROM runs WHERE state "
		      "= 'queued') AS more, coalesce((SELECT concurrency <= "
		      "(SELECT count(*) FROM runs WHERE node = $1 AND state = "
		      "'running') FROM nodes WHERE id = $1), false) AS is_full) "
		      "SELECT more, CASE WHEN more AND is_full THEN (SELECT "
		      "count(*) FROM (" WAKE_SQL("n.id <> $1", "$2") ") w) END "
		      "FROM m",
		      2, w);
		if (r == NULL) {
			al_store_run_clear(a->out);
			return fail(c);
		}
		a->out->more = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
		PQclear(r);
	}
	if ((rc = commit(c)) < 0) {
		al_store_run_clear(a->out);
		return rc;
	}
	if (n == 1 && (a->out->tenant == NULL || a->out->principal == NULL ||
		       a->out->body == NULL || a->out->node == NULL))
		return -ENOMEM;
	return n;
}

static int pg_claim(al_store *st, const char *node, const char *languages,
		    al_store_run *out)
{
	struct claim_args a = {node, languages, out, ""};
	memset(out, 0, sizeof(*out));
	lease_of((pg_store *)st, a.lease);
	return with_conn((pg_store *)st, claim_body, &a);
}

/* ---- finish ---------------------------------------------------------- */

struct fin_args {
	const char *node, *run_id, *outcome, *result;
	unsigned status;
	char lease[32];
};

static int fin_body(PGconn *c, void *a_)
{
	struct fin_args *a = a_;
	char sts[16];
	int rc;
	snprintf(sts, sizeof(sts), "%u", a->status);
	if ((rc = cmd(c, "BEGIN")) < 0)
		return rc;
	const char *v[] = {a->run_id, a->node, sts, a->outcome, a->result};
	PGresult *r = q(c,
			"UPDATE runs SET state = 'finished', status = $3, "
			"outcome = $4, result = $5, finished_at = now() WHERE "
			"id = $1 AND node = $2 AND state = 'running' "
			"RETURNING tenant",
			5, v);
	if (r == NULL)
		return fail(c);
	if (PQntuples(r) != 1) {
		PQclear(r);
		rc = commit(c);
		return rc < 0 ? rc : 0;
	}
	json_t *rec = json_pack("{s:s, s:s, s:s, s:s, s:s}", "event",
				"run.finished", "run_id", a->run_id, "tenant",
				PQgetvalue(r, 0, 0), "node", a->node,
				"outcome", a->outcome);
	PQclear(r);
	if (rec == NULL)
		return -ENOMEM;
	rc = notify(c, a->run_id);
	/* A slot of the node and one of the tenant are free: while the
	 * tenant has runs held back by its limit, a node is woken to take
	 * one (its own free slot wakes this node's claimer without it). */
	const char *w[] = {json_string_value(json_object_get(rec, "tenant")),
			   a->lease};
	PGresult *x = rc == 0 ? q(c,
				  WAKE_SQL("true", "$2")
				  " WHERE EXISTS (SELECT 1 FROM runs WHERE "
				  "state = 'queued' AND tenant = $1)",
				  2, w)
			      : NULL;
	if (rc == 0 && x == NULL)
		rc = fail(c);
	PQclear(x);
	if (rc == 0)
		rc = audit_append(c, rec);
	json_decref(rec);
	if (rc == 0)
		rc = commit(c);
	return rc < 0 ? rc : 1;
}

static int pg_finish(al_store *st, const char *node, const char *run_id,
		     unsigned status, const char *outcome, const char *result)
{
	struct fin_args a = {node, run_id, outcome, result, status, ""};
	lease_of((pg_store *)st, a.lease);
	return with_conn((pg_store *)st, fin_body, &a);
}

/* ---- get ------------------------------------------------------------- */

struct get_args {
	const char *tenant, *run_id;
	al_store_run *out;
};

static int get_body(PGconn *c, void *a_)
{
	struct get_args *a = a_;
	const char *v[] = {a->run_id, a->tenant};
	PGresult *r = q(c,
			"SELECT state, node, coalesce(status, 0), result, "
			"principal FROM runs WHERE id = $1 AND tenant = $2",
			2, v);
	if (r == NULL)
		return fail(c);
	int rc = -ENOENT;
	if (PQntuples(r) == 1) {
		al_store_run *o = a->out;
		snprintf(o->run_id, sizeof(o->run_id), "%s", a->run_id);
		snprintf(o->state, sizeof(o->state), "%s",
			 PQgetvalue(r, 0, 0));
		o->node = dup_or_null(r, 0, 1);
		o->status = (unsigned)strtoul(PQgetvalue(r, 0, 2), NULL, 10);
		o->result = dup_or_null(r, 0, 3);
		o->principal = dup_or_null(r, 0, 4);
		o->tenant = strdup(a->tenant);
		rc = o->tenant == NULL ? -ENOMEM : 0;
	}
	PQclear(r);
	return rc;
}

static int pg_get(al_store *st, const char *tenant, const char *run_id,
		  al_store_run *out)
{
	struct get_args a = {tenant, run_id, out};
	memset(out, 0, sizeof(*out));
	int rc = with_conn((pg_store *)st, get_body, &a);
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

static int ev_append_body(PGconn *c, void *a_)
{
	struct ev_args *a = a_;
	char seqs[24], streams[8];
	snprintf(seqs, sizeof(seqs), "%" PRIu64, a->seq);
	snprintf(streams, sizeof(streams), "%d", a->stream);
	const char *v[] = {a->run_id, seqs, streams, (const char *)a->data};
	int lens[] = {0, 0, 0, (int)a->len};
	int fmts[] = {0, 0, 0, 1};
	PGresult *r = PQexecParams(
		c,
		"WITH i AS (INSERT INTO events (run_id, seq, stream, data) "
		"VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING) SELECT "
		"pg_notify('" CHANNEL "', $1)",
		4, NULL, v, lens, fmts, 0);
	int rc = PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : fail(c);
	PQclear(r);
	return rc;
}

static int pg_events_append(al_store *st, const char *run_id, uint64_t seq,
			    int stream, const unsigned char *data, size_t len)
{
	if (len > INT32_MAX)
		return -EFBIG;
	struct ev_args a = {run_id, seq, stream, data, len, NULL, NULL};
	return with_conn((pg_store *)st, ev_append_body, &a);
}

static int ev_read_body(PGconn *c, void *a_)
{
	struct ev_args *a = a_;
	char seqs[24];
	snprintf(seqs, sizeof(seqs), "%" PRIu64, a->seq);
	const char *v[] = {a->run_id, seqs};
	/* Binary results: data arrives as raw bytes. */
	PGresult *r = PQexecParams(c,
				   "SELECT seq::text, stream::text, data FROM "
				   "events WHERE run_id = $1 AND seq >= $2 "
				   "ORDER BY seq LIMIT 512",
				   2, NULL, v, NULL, NULL, 1);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		PQclear(r);
		return fail(c);
	}
	int n = PQntuples(r), rc = 0;
	for (int i = 0; i < n && rc == 0; i++)
		rc = a->fn(a->ctx, strtoull(PQgetvalue(r, i, 0), NULL, 10),
			   atoi(PQgetvalue(r, i, 1)),
			   (const unsigned char *)PQgetvalue(r, i, 2),
			   (size_t)PQgetlength(r, i, 2));
	PQclear(r);
	return rc < 0 ? rc : 0;
}

static int pg_events_read(al_store *st, const char *run_id, uint64_t from,
			  al_store_event_fn fn, void *ctx)
{
	struct ev_args a = {run_id, from, 0, NULL, 0, fn, ctx};
	return with_conn((pg_store *)st, ev_read_body, &a);
}

/* ---- controls -------------------------------------------------------- */

struct ctl_args {
	const char *tenant, *run_id, *kind, *event_id, *event;
	al_store_control_fn fn;
	void *ctx;
};

static int ctl_add_body(PGconn *c, void *a_)
{
	struct ctl_args *a = a_;
	int rc;
	if ((rc = cmd(c, "BEGIN")) < 0)
		return rc;
	/* The row lock orders this against the run's finish. */
	const char *v[] = {a->run_id, a->tenant};
	PGresult *r = q(c,
			"SELECT state FROM runs WHERE id = $1 AND tenant = $2 "
			"FOR UPDATE",
			2, v);
	if (r == NULL)
		return fail(c);
	if (PQntuples(r) != 1)
		rc = -ENOENT;
	else if (strcmp(PQgetvalue(r, 0, 0), "finished") == 0)
		rc = -EALREADY;
	PQclear(r);
	if (rc < 0) {
		int crc = commit(c);
		return crc < 0 ? crc : rc;
	}
	const char *w[] = {a->run_id, a->kind, a->event_id, a->event};
	r = q(c,
	      "INSERT INTO controls (run_id, kind, event_id, event) VALUES "
	      "($1, $2, $3, $4) ON CONFLICT (run_id, event_id) DO NOTHING "
	      "RETURNING id",
	      4, w);
	if (r == NULL)
		return fail(c);
	int added = PQntuples(r);
	PQclear(r);
	if (added == 1 && (rc = notify(c, a->run_id)) < 0)
		return rc;
	if ((rc = commit(c)) < 0)
		return rc;
	return added == 1 ? 0 : 1;
}

static int pg_control_add(al_store *st, const char *tenant,
			  const char *run_id, const char *kind,
			  const char *event_id, const char *event)
{
	struct ctl_args a = {tenant, run_id, kind, event_id, event, NULL, NULL};
	return with_conn((pg_store *)st, ctl_add_body, &a);
}

static int ctl_take_body(PGconn *c, void *a_)
{
	struct ctl_args *a = a_;
	const char *v[] = {a->run_id};
	PGresult *r = q(c,
			"WITH t AS (UPDATE controls SET done = true WHERE "
			"run_id = $1 AND NOT done RETURNING id, kind, "
			"event_id, event) SELECT kind, event_id, event FROM t "
			"ORDER BY id",
			1, v);
	if (r == NULL)
		return fail(c);
	for (int i = 0; i < PQntuples(r); i++)
		a->fn(a->ctx, PQgetvalue(r, i, 0),
		      PQgetisnull(r, i, 1) ? NULL : PQgetvalue(r, i, 1),
		      PQgetisnull(r, i, 2) ? NULL : PQgetvalue(r, i, 2));
	PQclear(r);
	return 0;
}

static int pg_control_take(al_store *st, const char *run_id,
			   al_store_control_fn fn, void *ctx)
{
	struct ctl_args a = {NULL, run_id, NULL, NULL, NULL, fn, ctx};
	return with_conn((pg_store *)st, ctl_take_body, &a);
}

/* ---- nodes ----------------------------------------------------------- */

static int hb_body(PGconn *c, void *a_)
{
	const al_store_node *n = a_;
	char conc[16], use[16];
	snprintf(conc, sizeof(conc), "%u", n->concurrency);
	snprintf(use, sizeof(use), "%u", n->in_use);
	const char *v[] = {n->id, n->host, conc, use, n->facts};
	PGresult *r = q(c,
			"INSERT INTO nodes (id, host, started_at, heartbeat_at, "
			"concurrency, in_use, facts) VALUES ($1, $2, now(), "
			"now(), $3, $4, $5) ON CONFLICT (id) DO UPDATE SET "
			"host = $2, heartbeat_at = now(), concurrency = $3, "
			"in_use = $4, facts = $5",
			5, v);
	if (r == NULL)
		return fail(c);
	PQclear(r);
	return 0;
}

static int pg_heartbeat(al_store *st, const al_store_node *n)
{
	return with_conn((pg_store *)st, hb_body, (void *)n);
}

struct reap_args {
	const char *self;
	uint64_t lease_ms;
	const char *dead;
};

static int reap_body(PGconn *c, void *a_)
{
	struct reap_args *a = a_;
	char lease[32];
	int rc;
	snprintf(lease, sizeof(lease), "%" PRIu64 " milliseconds",
		 a->lease_ms);
	if ((rc = cmd(c, "BEGIN")) < 0)
		return rc;
	const char *v[] = {a->self, lease, a->dead};
	/* One UPDATE settles each run at most once: a run is 'running'
	 * until some transaction moves it, and only one can.  A dead node
	 * with a live node of its host and boot is left to that node's
	 * adoption. */
	/* A queued run pinned to a dead node is lost whatever its host:
	 * what it needed was in that node's memory.  Only the nodes the
	 * caller found dead are settled. */
	PGresult *r = q(
		c,
		"WITH gone AS (SELECT jsonb_array_elements_text($3::jsonb) AS "
		"id) UPDATE runs SET state = 'finished', status = 503, outcome = "
		"'unavailable', finished_at = now(), result = "
		"json_build_object('run_id', id, 'outcome', 'unavailable', "
		"'reason', 'lost', 'detail', 'node_lost')::text WHERE (state = "
		"'running' AND node IN (SELECT d.id FROM nodes d WHERE d.id <> $1 "
		"AND d.heartbeat_at < now() - $2::interval AND d.id IN (SELECT id "
		"FROM gone) AND NOT EXISTS (SELECT 1 FROM nodes l WHERE "
		"l.heartbeat_at >= now() - $2::interval AND l.host = d.host AND "
		"(l.facts::jsonb ->> 'boot_id') = (d.facts::jsonb ->> "
		"'boot_id')))) OR (state = 'queued' AND pinned IN (SELECT id FROM "
		"nodes WHERE id <> $1 AND heartbeat_at < now() - $2::interval AND "
		"id IN (SELECT id FROM gone))) RETURNING id, tenant, "
		"coalesce(node, pinned)",
		3, v);
	if (r == NULL)
		return fail(c);
	int n = PQntuples(r);
	for (int i = 0; i < n && rc == 0; i++) {
		json_t *rec = al_store_lost_record(
			PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
			PQgetvalue(r, i, 2), "node_lost");
		rc = rec == NULL ? -ENOMEM : audit_append(c, rec);
		json_decref(rec);
	}
	PQclear(r);
	if (rc == 0 && n > 0)
		rc = notify(c, "lost");
	if (rc == 0)
		rc = commit(c);
	return rc < 0 ? rc : n;
}

struct lapsed_args {
	const char *self;
	uint64_t lease_ms;
	al_store_node_fn fn;
	void *ctx;
};

static int lapsed_body(PGconn *c, void *a_)
{
	struct lapsed_args *a = a_;
	char lease[32];
	snprintf(lease, sizeof(lease), "%" PRIu64 " milliseconds",
		 a->lease_ms);
	const char *v[] = {a->self, lease};
	PGresult *r = q(c,
			"SELECT d.id, d.facts FROM nodes d WHERE d.id <> $1 AND "
			"d.heartbeat_at < now() - $2::interval AND (EXISTS "
			"(SELECT 1 FROM runs r WHERE r.state = 'running' AND "
			"r.node = d.id) OR EXISTS (SELECT 1 FROM runs r WHERE "
			"r.state = 'queued' AND r.pinned = d.id)) ORDER BY d.id",
			2, v);
	if (r == NULL)
		return fail(c);
	for (int i = 0; i < PQntuples(r); i++)
		a->fn(a->ctx, PQgetvalue(r, i, 0),
		      PQgetisnull(r, i, 1) ? NULL : PQgetvalue(r, i, 1));
	PQclear(r);
	return 0;
}

static int pg_lapsed(al_store *st, const char *self, uint64_t lease_ms,
		     al_store_node_fn fn, void *ctx)
{
	struct lapsed_args a = {self, lease_ms, fn, ctx};
	return with_conn((pg_store *)st, lapsed_body, &a);
}

struct adopt_args {
	const char *self, *host, *boot_id;
	uint64_t lease_ms;
	const char *dead;
	al_store_adopt_fn fn;
	void *ctx;
};

static int adopt_body(PGconn *c, void *a_)
{
	struct adopt_args *a = a_;
	char lease[32];
	int rc;
	snprintf(lease, sizeof(lease), "%" PRIu64 " milliseconds",
		 a->lease_ms);
	if ((rc = cmd(c, "BEGIN")) < 0)
		return rc;
	const char *v[] = {a->self, a->host, a->boot_id, lease, a->dead};
	PGresult *r = q(
		c,
		"WITH dead AS (SELECT id, facts::jsonb ->> 'state_dir' AS sd "
		"FROM nodes WHERE id <> $1 AND host = $2 AND facts::jsonb ->> "
		"'boot_id' = $3 AND heartbeat_at < now() - $4::interval AND id IN "
		"(SELECT jsonb_array_elements_text($5::jsonb))), "
		"moved AS (UPDATE runs r SET node = $1, adopted_dir = "
		"coalesce(r.adopted_dir, dead.sd, '') FROM dead WHERE r.node = "
		"dead.id AND r.state = 'running' RETURNING r.id, r.tenant, "
		"dead.id AS was, r.adopted_dir) SELECT id, tenant, was, "
		"adopted_dir FROM moved",
		5, v);
	if (r == NULL)
		return fail(c);
	int n = PQntuples(r);
	for (int i = 0; i < n && rc == 0; i++) {
		json_t *rec = json_pack("{s:s, s:s, s:s, s:s, s:s}", "event",
					"run.adopted", "run_id",
					PQgetvalue(r, i, 0), "tenant",
					PQgetvalue(r, i, 1), "node", a->self,
					"from", PQgetvalue(r, i, 2));
		rc = rec == NULL ? -ENOMEM : audit_append(c, rec);
		json_decref(rec);
	}
	if (rc == 0)
		rc = commit(c);
	for (int i = 0; i < n && rc == 0; i++)
		a->fn(a->ctx, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
		      PQgetisnull(r, i, 3) ? "" : PQgetvalue(r, i, 3));
	PQclear(r);
	return rc < 0 ? rc : n;
}

static int pg_adopt(al_store *st, const char *self, const char *host,
		    const char *boot_id, uint64_t lease_ms,
		    const char *dead, al_store_adopt_fn fn, void *ctx)
{
	struct adopt_args a = {self, host, boot_id, lease_ms, dead, fn,
			       ctx};
	return with_conn((pg_store *)st, adopt_body, &a);
}

static int lose_pinned_body(PGconn *c, void *a_)
{
	const char *node = a_;
	int rc;
	if ((rc = cmd(c, "BEGIN")) < 0)
		return rc;
	const char *v[] = {node};
	PGresult *r = q(
		c,
		"UPDATE runs SET state = 'finished', status = 503, outcome = "
		"'unavailable', finished_at = now(), result = "
		"json_build_object('run_id', id, 'outcome', 'unavailable', "
		"'reason', 'lost', 'detail', 'forwarded_env_lost')::text WHERE "
		"state = 'queued' AND pinned = $1 RETURNING id, tenant",
		1, v);
	if (r == NULL)
		return fail(c);
	int n = PQntuples(r);
	for (int i = 0; i < n && rc == 0; i++) {
		json_t *rec = al_store_lost_record(
			PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), node,
			"forwarded_env_lost");
		rc = rec == NULL ? -ENOMEM : audit_append(c, rec);
		json_decref(rec);
	}
	PQclear(r);
	if (rc == 0 && n > 0)
		rc = notify(c, "lost");
	if (rc == 0)
		rc = commit(c);
	return rc < 0 ? rc : n;
}

static int pg_lose_pinned(al_store *st, const char *node)
{
	return with_conn((pg_store *)st, lose_pinned_body, (void *)node);
}

static int pg_reap(al_store *st, const char *self, uint64_t lease_ms,
		   const char *dead)
{
	struct reap_args a = {self, lease_ms, dead};
	return with_conn((pg_store *)st, reap_body, &a);
}

static int requeue_body(PGconn *c, void *a_)
{
	const char *const *v = a_;
	PGresult *r = q(c,
			"UPDATE runs SET state = 'queued', node = NULL, "
			"claimed_at = NULL WHERE id = $2 AND node = $1 AND "
			"state = 'running' AND adopted_dir IS NULL",
			2, v);
	if (r == NULL)
		return fail(c);
	int n = atoi(PQcmdTuples(r));
	PQclear(r);
	if (n == 1)
		(void)notify(c, "q *");
	return n;
}

static int pg_requeue(al_store *st, const char *node, const char *run_id)
{
	const char *v[] = {node, run_id};
	return with_conn((pg_store *)st, requeue_body, (void *)v);
}

struct orphan_args {
	const char *node;
	al_store_orphan_fn fn;
	void *ctx;
};

static int orphan_body(PGconn *c, void *a_)
{
	struct orphan_args *a = a_;
	const char *v[] = {a->node};
	PGresult *r = q(c,
			"SELECT id, tenant, adopted_dir FROM runs WHERE node = "
			"$1 AND state = 'running' ORDER BY qseq",
			1, v);
	if (r == NULL)
		return fail(c);
	for (int i = 0; i < PQntuples(r); i++)
		a->fn(a->ctx, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
		      PQgetisnull(r, i, 2) ? NULL : PQgetvalue(r, i, 2));
	PQclear(r);
	return 0;
}

static int pg_orphans(al_store *st, const char *node, al_store_orphan_fn fn,
		      void *ctx)
{
	struct orphan_args a = {node, fn, ctx};
	return with_conn((pg_store *)st, orphan_body, &a);
}

/* ---- listing ---------------------------------------------------------- */

struct lang_args {
	const char *node, *run_id, *language;
};

static int lang_body(PGconn *c, void *a_)
{
	struct lang_args *a = a_;
	int rc;
	/* A hint for listing: its commit does not wait for the disk. */
	if ((rc = cmd(c, "BEGIN")) < 0 ||
	    (rc = cmd(c, "SET LOCAL synchronous_commit = off")) < 0)
		return rc;
	const char *v[] = {a->run_id, a->node, a->language};
	PGresult *r = q(c,
			"UPDATE runs SET admitted_language = $3 WHERE id = $1 "
			"AND node = $2 AND state = 'running'",
			3, v);
	if (r == NULL)
		return fail(c);
	PQclear(r);
	return commit(c);
}

static int pg_set_language(al_store *st, const char *node, const char *run_id,
			   const char *language)
{
	struct lang_args a = {node, run_id, language};
	return with_conn((pg_store *)st, lang_body, &a);
}

struct list_args {
	const al_store_list_query *q;
	al_store_list_fn fn;
	void *ctx;
};

static int list_body(PGconn *c, void *a_)
{
	struct list_args *a = a_;
	const al_store_list_query *lq = a->q;
	char after[24] = "", since[24] = "", until[24] = "", lim[16];
	if (lq->after != NULL) {
		const char *v[] = {lq->after, lq->tenant};
		PGresult *r = q(c,
				"SELECT qseq FROM runs WHERE id = $1 AND "
				"tenant = $2",
				2, v);
		if (r == NULL)
			return fail(c);
		int n = PQntuples(r);
		if (n == 1)
			snprintf(after, sizeof(after), "%s",
				 PQgetvalue(r, 0, 0));
		PQclear(r);
		if (n != 1)
			return -ENOENT;
	}
	if (lq->since_ms != INT64_MIN)
		snprintf(since, sizeof(since), "%" PRId64, lq->since_ms);
	if (lq->until_ms != INT64_MAX)
		snprintf(until, sizeof(until), "%" PRId64, lq->until_ms);
	snprintf(lim, sizeof(lim), "%u", lq->limit);
	const char *v[] = {lq->tenant,	     after[0] ? after : NULL,
			   lq->outcome,	     lq->language,
			   since[0] ? since : NULL, until[0] ? until : NULL,
			   lim};
	/* created_at in whole milliseconds, as the list shows it. */
	PGresult *r = q(
		c,
		"SELECT id, state, ms, outcome, admitted_language FROM (SELECT "
		"id, qseq, state, floor(extract(epoch FROM created_at) * "
		"1000)::bigint AS ms, CASE WHEN state = 'finished' THEN "
		"outcome END AS outcome, admitted_language FROM runs WHERE "
		"tenant = $1 AND ($2::bigint IS NULL OR qseq < $2::bigint)) x "
		"WHERE ($3::text IS NULL OR outcome = $3) AND ($4::text IS NULL "
		"OR admitted_language = $4) AND ($5::bigint IS NULL OR ms >= "
		"$5::bigint) AND ($6::bigint IS NULL OR ms < $6::bigint) ORDER "
		"BY qseq DESC LIMIT $7::integer",
		7, v);
	if (r == NULL)
		return fail(c);
	int rc = 0;
	for (int i = 0; i < PQntuples(r) && rc == 0; i++)
		rc = a->fn(a->ctx, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
			   strtoll(PQgetvalue(r, i, 2), NULL, 10),
			   PQgetisnull(r, i, 3) ? NULL : PQgetvalue(r, i, 3),
			   PQgetisnull(r, i, 4) ? NULL : PQgetvalue(r, i, 4));
	PQclear(r);
	return rc < 0 ? rc : 0;
}

static int pg_list(al_store *st, const al_store_list_query *q,
		   al_store_list_fn fn, void *ctx)
{
	struct list_args a = {q, fn, ctx};
	return with_conn((pg_store *)st, list_body, &a);
}

/* ---- notices --------------------------------------------------------- */

static void bump(pg_store *s, bool queued)
{
	pthread_mutex_lock(&s->lock);
	s->notices++;
	if (queued)
		s->queued++;
	pthread_cond_broadcast(&s->notice);
	pthread_mutex_unlock(&s->lock);
}

static bool closing(pg_store *s)
{
	pthread_mutex_lock(&s->lock);
	bool c = s->closing;
	pthread_mutex_unlock(&s->lock);
	return c;
}

/* A queue notice that wakes this node's claimer: "q *", "q SELF", or
 * "queued" (from a node of an earlier version, which wakes every one). */
static bool for_us(pg_store *s, const char *what)
{
	if (strcmp(what, "queued") == 0 || strcmp(what, "q *") == 0)
		return true;
	if (strncmp(what, "q ", 2) != 0)
		return false;
	pthread_mutex_lock(&s->lock);
	bool us = s->self[0] == '\0' || strcmp(what + 2, s->self) == 0;
	pthread_mutex_unlock(&s->lock);
	return us;
}

static void pg_set_self(al_store *st, const char *node, uint64_t lease_ms)
{
	pg_store *s = (pg_store *)st;
	pthread_mutex_lock(&s->lock);
	snprintf(s->self, sizeof(s->self), "%s", node);
	snprintf(s->lease, sizeof(s->lease), "%" PRIu64 " milliseconds",
		 lease_ms);
	pthread_mutex_unlock(&s->lock);
}

static void *listen_main(void *arg)
{
	pg_store *s = arg;
	PGconn *c = NULL;
	while (!closing(s)) {
		if (c == NULL) {
			c = connect_quiet(s->url);
			if (c == NULL || cmd(c, "LISTEN " CHANNEL) < 0) {
				if (c != NULL)
					PQfinish(c);
				c = NULL;
				struct timespec ts = {0, 200 * 1000 * 1000};
				nanosleep(&ts, NULL);
				continue;
			}
			/* Notices sent while no one listened are gone:
			 * wake every waiter to look again. */
			bump(s, true);
		}
		struct pollfd p = {.fd = PQsocket(c), .events = POLLIN};
		int n = poll(&p, 1, 250);
		if (n < 0)
			continue;
		if (n > 0 && PQconsumeInput(c) == 0) {
			PQfinish(c);
			c = NULL;
			continue;
		}
		bool any = false, queued = false;
		PGnotify *nt;
		while ((nt = PQnotifies(c)) != NULL) {
			any = true;
			queued = queued || for_us(s, nt->extra);
			PQfreemem(nt);
		}
		if (any)
			bump(s, queued);
	}
	if (c != NULL)
		PQfinish(c);
	return NULL;
}

static void pg_wait(al_store *st, bool queue, uint64_t *seen,
		    unsigned timeout_ms)
{
	pg_store *s = (pg_store *)st;
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

/* ---- audit verification --------------------------------------------- */

struct verify_args {
	uint64_t *records;
	al_error **err;
};

static int verify_body(PGconn *c, void *a_)
{
	struct verify_args *a = a_;
	char prev[65], hash[65];
	int rc = 0;
	memcpy(prev, zero_hash, sizeof(prev));
	*a->records = 0;
	if ((rc = cmd(c, "BEGIN ISOLATION LEVEL REPEATABLE READ")) < 0 ||
	    (rc = cmd(c, "DECLARE chain NO SCROLL CURSOR FOR SELECT seq, "
			 "prev_hash, hash, record FROM audit ORDER BY seq")) <
		    0)
		return rc;
	for (int64_t want = 1;;) {
		PGresult *r = q(c, "FETCH 1000 FROM chain", 0, NULL);
		if (r == NULL)
			return fail(c);
		int n = PQntuples(r);
		for (int i = 0; i < n && rc == 0; i++, want++) {
			int64_t seq = strtoll(PQgetvalue(r, i, 0), NULL, 10);
			const char *ph = PQgetvalue(r, i, 1),
				   *h = PQgetvalue(r, i, 2),
				   *rec = PQgetvalue(r, i, 3);
			const char *why = NULL;
			size_t rl = strlen(rec);
			char *cat = malloc(64 + rl + 1);
			if (cat == NULL) {
				rc = -ENOMEM;
				break;
			}
			/* A malformed prev_hash fails the comparison below. */
			const char *pp = strlen(ph) == 64 ? ph : zero_hash;
			memcpy(cat, pp, 64);
			memcpy(cat + 64, rec, rl + 1);
			al_sha256_hex(cat, 64 + rl, hash);
			free(cat);
			if (seq != want)
				why = "sequence gap";
			else if (strcmp(ph, prev) != 0)
				why = "previous hash mismatch";
			else if (strcmp(hash, h) != 0)
				why = "record hash mismatch";
			if (why != NULL) {
				rc = al_error_set(a->err, AL_ERR_IO, EBADMSG,
						  "audit",
						  "audit chain broken at "
						  "record %" PRId64 ": %s",
						  seq, why);
				break;
			}
			snprintf(prev, sizeof(prev), "%s", h);
			(*a->records)++;
		}
		PQclear(r);
		if (rc < 0 || n == 0)
			break;
	}
	int crc = commit(c);
	return rc < 0 ? rc : crc;
}

static int pg_audit_verify(al_store *st, uint64_t *records, al_error **err)
{
	struct verify_args a = {records, err};
	int rc = with_conn((pg_store *)st, verify_body, &a);
	if (rc == -EAGAIN)
		al_error_set(err, AL_ERR_IO, EAGAIN, "store",
			     "cannot reach the store");
	return rc;
}

/* ---- open, migrate, close ------------------------------------------- */

static void pg_close(al_store *st)
{
	pg_store *s = (pg_store *)st;
	if (s == NULL)
		return;
	if (s->listening) {
		pthread_mutex_lock(&s->lock);
		s->closing = true;
		pthread_cond_broadcast(&s->notice);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->listener, NULL);
	}
	for (unsigned i = 0; i < s->n_idle; i++)
		PQfinish(s->idle[i]);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->freed);
	pthread_cond_destroy(&s->notice);
	free(s->url);
	free(s);
}

/* Applies the migrations this build has and the database has not, in
 * order, each in its own transaction, under an advisory lock so that
 * nodes starting together apply each once. */
static int migrate(PGconn *c, al_error **err)
{
	int rc = 0;
	if (cmd(c, "SET client_min_messages = warning") < 0 ||
	    cmd(c, "SELECT pg_advisory_lock(7400)") < 0 ||
	    cmd(c, "CREATE TABLE IF NOT EXISTS schema_migrations (version "
		   "integer PRIMARY KEY, name text NOT NULL, applied_at "
		   "timestamptz NOT NULL DEFAULT now())") < 0)
		return al_error_set(err, AL_ERR_IO, EIO, "store",
				    "cannot prepare the migrations: %s",
				    PQerrorMessage(c));
	PGresult *r = q(c, "SELECT coalesce(max(version), 0) FROM "
			   "schema_migrations",
			0, NULL);
	int have = r ? atoi(PQgetvalue(r, 0, 0)) : -1;
	PQclear(r);
	int newest = 0;
	for (size_t i = 0; i < sizeof(migrations) / sizeof(migrations[0]);
	     i++)
		newest = migrations[i].version;
	if (have > newest)
		rc = al_error_set(err, AL_ERR_INVALID_CONFIG, EPROTO, "store",
				  "the store's schema (version %d) is newer "
				  "than this build's (%d)",
				  have, newest);
	for (size_t i = 0;
	     have >= 0 && rc == 0 &&
	     i < sizeof(migrations) / sizeof(migrations[0]);
	     i++) {
		const al_migration *m = &migrations[i];
		if (m->version <= have)
			continue;
		char vs[16];
		snprintf(vs, sizeof(vs), "%d", m->version);
		const char *v[] = {vs, m->name};
		PGresult *x = NULL;
		if (cmd(c, "BEGIN") < 0 || script(c, m->sql) < 0 ||
		    (x = q(c,
			   "INSERT INTO schema_migrations (version, name) "
			   "VALUES ($1, $2)",
			   2, v)) == NULL ||
		    cmd(c, "COMMIT") < 0) {
			rc = al_error_set(err, AL_ERR_IO, EIO, "store",
					  "migration %s failed: %s", m->name,
					  PQerrorMessage(c));
			PGresult *rb = PQexec(c, "ROLLBACK");
			PQclear(rb);
		}
		PQclear(x);
	}
	if (have < 0)
		rc = al_error_set(err, AL_ERR_IO, EIO, "store",
				  "cannot read the schema version: %s",
				  PQerrorMessage(c));
	PGresult *u = PQexec(c, "SELECT pg_advisory_unlock(7400)");
	PQclear(u);
	return rc;
}

static const al_store_ops pg_ops = {
	.name = "postgresql",
	.close = pg_close,
	.enqueue = pg_enqueue,
	.claim = pg_claim,
	.finish = pg_finish,
	.get = pg_get,
	.events_append = pg_events_append,
	.events_read = pg_events_read,
	.control_add = pg_control_add,
	.control_take = pg_control_take,
	.heartbeat = pg_heartbeat,
	.lapsed = pg_lapsed,
	.reap = pg_reap,
	.orphans = pg_orphans,
	.adopt = pg_adopt,
	.requeue = pg_requeue,
	.wait = pg_wait,
	.audit_verify = pg_audit_verify,
	.audit_chain = pg_audit_chain,
	.set_language = pg_set_language,
	.list = pg_list,
	.lose_pinned = pg_lose_pinned,
	.set_self = pg_set_self,
};

int al_store_pg_open(const char *url, al_store **out, al_error **err);

int al_store_pg_open(const char *url, al_store **out, al_error **err)
{
	*out = NULL;
	pthread_once(&pq_once, pq_load);
	if (pq_missing != NULL)
		return al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "store",
				    "a postgresql:// store needs libpq: %s "
				    "could not be loaded (install libpq5)",
				    pq_missing);
	pg_store *s = calloc(1, sizeof(*s));
	if (s == NULL || (s->url = strdup(url)) == NULL) {
		free(s);
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	}
	s->base.ops = &pg_ops;
	snprintf(s->lease, sizeof(s->lease), "5000 milliseconds");
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->freed, NULL);
	pthread_cond_init(&s->notice, NULL);
	PGconn *c = PQconnectdb(url);
	int rc = 0;
	/* The URL may carry a password: the message is libpq's, which
	 * never repeats it. */
	if (c == NULL || PQstatus(c) != CONNECTION_OK) {
		rc = al_error_set(err, AL_ERR_IO, ECONNREFUSED, "store",
				  "cannot connect to the store: %s",
				  c ? PQerrorMessage(c) : "out of memory");
		PQfinish(c);
		pg_close(&s->base);
		return rc;
	}
	if ((rc = migrate(c, err)) < 0) {
		PQfinish(c);
		pg_close(&s->base);
		return rc;
	}
	s->idle[s->n_idle++] = c;
	s->n_open = 1;
	if (pthread_create(&s->listener, NULL, listen_main, s) != 0) {
		pg_close(&s->base);
		return al_error_set(err, AL_ERR_INTERNAL, EAGAIN, NULL,
				    "cannot start the store's listener");
	}
	s->listening = true;
	*out = &s->base;
	return 0;
}
