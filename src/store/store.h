/* Internal: the fleet's shared store (docs/scale-out.md).  Many airlockd
 * nodes share one store: the queue of accepted runs and their results,
 * live output events, control requests (interrupt, stop, inbox), the
 * nodes' leases and the fleet's audit chain.  A backend is an operations
 * table; al_store_open picks it from the configured "store" URL.
 *
 * Return convention: 0 (or a documented positive value), or a negative
 * errno; -EAGAIN means the store could not be reached (the caller retries
 * or answers 503). */
#ifndef AL_STORE_STORE_H
#define AL_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <airlock/error.h>

typedef struct al_store al_store;

typedef struct al_store_submit {
	const char *run_id; /* a fresh id (al_run_id_new) */
	const char *tenant;
	const char *principal;
	const char *body;
	const char *request_sha256; /* of body */
	const char *idem_key;	    /* NULL: none */
	unsigned tenant_max;	    /* the tenant's concurrency; 0: none */
	const char *language;	    /* the request's, or NULL */
	uint64_t lease_ms;	    /* a node heard from within this is live */
	/* The only node that may claim it (it holds what the run needs in
	 * memory: a forwarded environment), or NULL: any. */
	const char *pinned;
	/* This submission's own random tag, or NULL: a row under run_id
	 * with another tag is another submission's (-EADDRINUSE). */
	const char *nonce;
	/* The submitter's W3C traceparent (checked), or NULL: the executing
	 * node's run joins the caller's trace. */
	const char *traceparent;
} al_store_submit;

/* A run as the store has it.  Strings are owned (al_store_run_clear). */
typedef struct al_store_run {
	char run_id[40];
	char state[16]; /* queued, running, finished */
	char *node;	/* the node that claimed it, or NULL */
	char *tenant;
	char *principal;
	char *body;   /* claim only */
	char *result; /* finished only */
	unsigned status;
	bool pinned; /* claim: pinned to the claiming node */
	bool more;   /* claim: other runs were left queued */
	char traceparent[56]; /* claim: the submitter's, "" when none */
} al_store_run;

void al_store_run_clear(al_store_run *r);

/* A node's published selection facts (the nodes table). */
typedef struct al_store_node {
	const char *id;
	const char *host;
	unsigned concurrency;
	unsigned in_use;
	const char *facts; /* JSON text: providers, languages */
} al_store_node;

typedef int (*al_store_event_fn)(void *ctx, uint64_t seq, int stream,
				 const unsigned char *data, size_t len);
typedef void (*al_store_control_fn)(void *ctx, const char *kind,
				    const char *event_id, const char *event);
/* adopted_dir: the state directory of the dead node whose supervisor
 * this node watches (an adopted run), else NULL. */
typedef void (*al_store_orphan_fn)(void *ctx, const char *run_id,
				   const char *tenant,
				   const char *adopted_dir);
typedef void (*al_store_adopt_fn)(void *ctx, const char *run_id,
				  const char *tenant, const char *state_dir);
/* A node and its published facts (JSON text). */
typedef void (*al_store_node_fn)(void *ctx, const char *node,
				 const char *facts);

/* GET /v1/runs's query (docs/api.md, "Listing runs"). */
typedef struct al_store_list_query {
	const char *tenant;
	unsigned limit;	     /* at most this many runs */
	const char *after;   /* start past this run of the tenant; NULL: newest */
	const char *outcome; /* finished with this outcome; NULL: any */
	const char *language; /* admitted in this language; NULL: any */
	int64_t since_ms;    /* created at or after (ms); INT64_MIN: any */
	int64_t until_ms;    /* created before; INT64_MAX: any */
} al_store_list_query;

/* One listed run: state queued, running or finished; outcome NULL
 * unless finished; language NULL until admitted. */
typedef int (*al_store_list_fn)(void *ctx, const char *run_id,
				const char *state, int64_t created_ms,
				const char *outcome, const char *language);

typedef struct al_store_ops {
	const char *name;
	void (*close)(al_store *st);
	/* 0: queued as run_id; 1: the key names an earlier run of the
	 * same request, whose id is copied to existing; -EEXIST: the key
	 * belongs to a different request; -EADDRINUSE: run_id names a run
	 * of another submission (a caller-chosen id in use). */
	int (*enqueue)(al_store *st, const al_store_submit *s,
		       char existing[40]);
	/* Claims the oldest queued run of a tenant under its fleet-wide
	 * concurrency, FIFO per tenant, whose language is one of languages
	 * (a JSON array of strings) or was published by no live node, and
	 * that is pinned to no other node: 1 claimed (*out filled), 0 none. */
	int (*claim)(al_store *st, const char *node, const char *languages,
		     al_store_run *out);
	/* Records the run's one terminal outcome: 1 recorded, 0 the run was
	 * no longer this node's running run (already settled). */
	int (*finish)(al_store *st, const char *node, const char *run_id,
		      unsigned status, const char *outcome,
		      const char *result);
	/* The run of this tenant (-ENOENT: none, or another tenant's). */
	int (*get)(al_store *st, const char *tenant, const char *run_id,
		   al_store_run *out);
	int (*events_append)(al_store *st, const char *run_id, uint64_t seq,
			     int stream, const unsigned char *data,
			     size_t len);
	/* Events with seq >= from, in order; fn returning non-zero stops. */
	int (*events_read)(al_store *st, const char *run_id, uint64_t from,
			   al_store_event_fn fn, void *ctx);
	/* A control request for a running run: 0 added, 1 an inbox event id
	 * already delivered, -ENOENT no such run of the tenant, -EALREADY
	 * finished, -EBUSY still queued. */
	int (*control_add)(al_store *st, const char *tenant,
			   const char *run_id, const char *kind,
			   const char *event_id, const char *event);
	/* Hands the run's pending control requests to fn, once each. */
	int (*control_take)(al_store *st, const char *run_id,
			    al_store_control_fn fn, void *ctx);
	int (*heartbeat)(al_store *st, const al_store_node *n);
	/* The nodes other than self whose lease ran out (lease_ms without
	 * a heartbeat) that still hold running runs or queued runs pinned
	 * to them, fn each: 0 (a read only). */
	int (*lapsed)(al_store *st, const char *self, uint64_t lease_ms,
		      al_store_node_fn fn, void *ctx);
	/* Settles the running runs of dead nodes, and the queued runs
	 * pinned to them, as lost, each once: the number settled.  A dead
	 * node is one of `dead` (a JSON array of node ids, those of lapsed
	 * the caller found gone, src/server/node_process.h) whose lease
	 * still runs out (lease_ms without a heartbeat). */
	int (*reap)(al_store *st, const char *self, uint64_t lease_ms,
		    const char *dead);
	/* Takes over the running runs of dead nodes (as for reap) that
	 * published this host and boot id: they become self's, each with a
	 * run.adopted record, and fn gets each with the dead node's
	 * published state directory.  The number taken. */
	int (*adopt)(al_store *st, const char *self, const char *host,
		     const char *boot_id, uint64_t lease_ms,
		     const char *dead, al_store_adopt_fn fn, void *ctx);
	/* This node's runs the store has as running (a restart). */
	int (*orphans)(al_store *st, const char *node, al_store_orphan_fn fn,
		       void *ctx);
	/* Gives back a run this node's claim took but whose answer was lost
	 * (the connection broke at the commit): only for a run this node
	 * has certainly not started.  1 given back, 0 not ours. */
	int (*requeue)(al_store *st, const char *node, const char *run_id);
	/* Waits for a change notice (a run queued, finished, an event,
	 * a control; queue: only a wake-up for this node's claimer, see
	 * set_self) past *seen, at most timeout_ms (0: does not wait);
	 * updates *seen. */
	void (*wait)(al_store *st, bool queue, uint64_t *seen,
		     unsigned timeout_ms);
	/* Checks the audit chain: 0 with *records, or -EBADMSG with *err
	 * naming the first bad record. */
	int (*audit_verify)(al_store *st, uint64_t *records, al_error **err);
	/* Moves a batch of records committed with their changes into the
	 * chain (one node at a time): the number chained, 0 when none (or
	 * another node holds the chain). */
	int (*audit_chain)(al_store *st);
	/* Notes the language the run (this node's, running) was admitted in,
	 * for list: a hint, not made durable before it returns. */
	int (*set_language)(al_store *st, const char *node, const char *run_id,
			    const char *language);
	/* The tenant's runs newest first (in submission order) that pass q,
	 * at most q->limit, fn each (non-zero stops): 0, or -ENOENT when
	 * q->after names no run of the tenant. */
	int (*list)(al_store *st, const al_store_list_query *q,
		    al_store_list_fn fn, void *ctx);
	/* Settles the queued runs pinned to node as lost, each once (what
	 * they needed was in its memory: it restarted or is stopping): the
	 * number settled. */
	int (*lose_pinned)(al_store *st, const char *node);
	/* Names this process's node and its lease (before it claims): a
	 * queued run wakes one live node with a free slot that can run it
	 * (every node only when none is known to), a claim that fills its
	 * node wakes another while runs are left, and wait(queue) returns
	 * only for wake-ups naming this node or all. */
	void (*set_self)(al_store *st, const char *node, uint64_t lease_ms);
} al_store_ops;

struct al_store {
	const al_store_ops *ops;
};

/* True when url names a backend of this build ("postgresql://...",
 * "postgres://..."). */
bool al_store_url_ok(const char *url);
/* Opens the store (connects, applies the migrations under a lock). */
int al_store_open(const char *url, al_store **out, al_error **err);

/* `airlock audit verify --store URL`: opens, verifies the fleet's audit
 * chain, closes. */
int al_store_audit_verify(const char *url, uint64_t *records, al_error **err);

#endif
