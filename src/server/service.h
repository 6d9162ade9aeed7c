/* Internal: the service's shared state — the current host (swapped on
 * reload), the run table, metrics — and the run operations the HTTP routes
 * use.  One mutex guards the table and every run's mutable fields. */
#ifndef AL_SERVER_SERVICE_H
#define AL_SERVER_SERVICE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <airlock/host.h>
#include <airlock/server.h>

#include "host/admission.h"
#include "server/auth.h"
#include "server/idle_pool.h"
#include "server/metrics.h"
#include "server/run_filter.h"
#include "server/durable.h"

/* A configuration generation: runs keep the host they started on, so a
 * reload never pulls a host from under a live run. */
typedef struct al_srv_gen {
	unsigned refs; /* under service lock */
	al_config *cfg;
	al_host *host;
	al_auth *auth;
	struct al_compat_cfg *compat; /* NULL: the compat APIs are off */
} al_srv_gen;

typedef enum al_srv_run_state {
	AL_SRV_RUN_RUNNING = 0,
	AL_SRV_RUN_DONE
} al_srv_run_state;

typedef struct al_srv_event {
	uint64_t seq;
	int stream; /* AL_STDOUT / AL_STDERR */
	unsigned char *data;
	size_t len;
} al_srv_event;

typedef struct al_service al_service;

typedef struct al_srv_run {
	struct al_srv_run *newer, *older; /* table order, newest first */
	al_service *svc;
	unsigned refs; /* table + workers + waiters; under service lock */
	char run_id[40]; /* "" until the host named it */
	char *tenant;
	char principal[AL_AUTH_PRINCIPAL_LEN];
	int64_t created_ms;
	al_srv_run_state state;
	char *result_json; /* when done and not on disk (refusals) */
	unsigned status;   /* HTTP status of the result, when done */
	al_outcome outcome;
	char language[32]; /* the request's, once admitted; "" unknown */
	al_cancel *cancel;
	al_srv_gen *gen;
	char *body; /* the request text, freed once the run starts */
	size_t body_len;
	/* From the request's headers (docs/api.md), freed (the forwarded
	 * environment wiped) once admitted: */
	char *asked_run_id;  /* X-Airlock-Run-Id */
	char *forwarded_env; /* X-Airlock-Forwarded-Env */
	char traceparent[56]; /* W3C traceparent, "" when none */
	/* The caller-chosen id this run reserved ("" when none): no other
	 * run may take it while the table remembers this one. */
	char claimed_id[40];
	/* The durable run (docs/durability.md) once its supervisor is
	 * launched or adopted; NULL before and after.  drun_users counts
	 * HTTP threads using it: the watcher frees it only when none is. */
	al_drun *drun;
	unsigned drun_users;
	bool launched;	     /* drun's supervisor is started: controllable */
	bool stop_requested; /* interrupt?wait=true: escalate after grace */
	int64_t stop_at_ms;
	bool has_dir;	     /* a run directory was made (retention removes it) */
	al_admission *adopted; /* recovery: the resumed admission, handed to
				  the watcher thread */
	/* Live output kept for late subscribers: events [0, n_events) carry
	 * seq first_seq.., oldest dropped first past the byte bound. */
	al_srv_event *events;
	size_t n_events, cap_events, event_bytes;
	uint64_t next_seq;
	/* A compiled run's build stage (its result JSON, AL_OUTLOG_BUILD),
	 * once the build has ended and the program starts; NULL before. */
	char *build_stage;
	pthread_cond_t changed; /* id known, event, done */
	/* An interactive run's live stdin (docs/compat.md): the write end
	 * of its RUN/stdin FIFO, open once the run directory exists
	 * (stdin_open); closing it ends the program's input.  Under the
	 * service lock. */
	bool stdin_stream, stdin_open;
	int stdin_fd;
} al_srv_run;

struct al_service {
	pthread_mutex_t lock;
	pthread_cond_t idle; /* a worker ended */
	al_server_options opts;
	al_srv_gen *gen; /* current */
	al_srv_metrics *metrics;
	al_srv_run *newest, *oldest;
	size_t n_runs;
	size_t max_runs; /* AL_SRV_MAX_RUNS, or smaller for tests */
	unsigned active;  /* runs not done */
	unsigned workers; /* worker threads alive */
	unsigned requests; /* HTTP requests past their headers, not ended */
	bool draining;	  /* refuse new runs */
	bool closing;	  /* wake and end every waiter */
	al_durable *durable; /* run directories, epoch, supervisors */
	al_idle_pool *idle_sups; /* idle supervisors; NULL until started */
	struct al_fleet *fleet;	 /* a fleet node (docs/scale-out.md); NULL */
};

/* Bounds of the in-memory table and event buffers. */
#define AL_SRV_MAX_RUNS 4096u
#define AL_SRV_MAX_EVENT_BYTES (1024u * 1024u)
#define AL_SRV_MAX_EVENTS 8192u
/* What a finished run keeps of them. */
#define AL_SRV_DONE_EVENT_BYTES (16u * 1024u)

int al_service_init(al_service *svc, const al_server_options *opts);
void al_service_destroy(al_service *svc);

/* Takes a reference to the current generation (NULL while none). */
al_srv_gen *al_service_gen_get(al_service *svc);
void al_service_gen_put(al_service *svc, al_srv_gen *gen);
/* Installs a new current generation (the service takes ownership). */
void al_service_gen_set(al_service *svc, al_srv_gen *gen);
void al_srv_gen_free(al_srv_gen *gen);

/* Starts a run on its own thread.  body is copied.  On success *out is a
 * referenced run (al_service_run_put when done with it).  -ESHUTDOWN while
 * draining, -EAGAIN when no thread could be started. */
typedef struct al_srv_submit_headers {
	const char *run_id;	   /* X-Airlock-Run-Id or NULL */
	const char *forwarded_env; /* X-Airlock-Forwarded-Env or NULL */
	const char *traceparent;   /* a valid W3C traceparent or NULL */
	bool stdin_stream; /* an interactive run (a WebSocket's) */
} al_srv_submit_headers;

int al_service_submit(al_service *svc, al_srv_gen *gen, const char *tenant,
		      const char *principal, const char *body, size_t len,
		      const al_srv_submit_headers *hdrs, al_srv_run **out);
/* Waits until the run has an id or is done (wait_done: until done), or the
 * service closes.  Returns with the lock NOT held. */
void al_service_wait(al_service *svc, al_srv_run *run, bool wait_done);
/* A referenced run of this tenant, or NULL (unknown and foreign alike). */
al_srv_run *al_service_find(al_service *svc, const char *tenant,
			    const char *run_id);
void al_service_run_put(al_service *svc, al_srv_run *run);
/* Reads of what a run left (docs/api.md, "Reading a run").  Ownership of
 * a run that has a directory comes from its durable record (the tenant
 * in RUN/recovery.json), never from the table: run is the table's entry
 * for this tenant or NULL (evicted, or made by an earlier daemon).
 * 0 when tenant owns it, -ENOENT otherwise (another tenant's, unknown,
 * forgotten: all alike). */
int al_service_owns(al_service *svc, const char *tenant, const char *run_id,
		    al_srv_run *run);
/* A finished run's result: its final.json open for reading (fd, size),
 * or, for a run that has no directory, the table's text. */
typedef struct al_srv_stored {
	char *text; /* or NULL */
	int fd;	    /* or -1 */
	uint64_t size;
} al_srv_stored;
int al_service_stored_result(al_service *svc, const char *tenant,
			     const char *run_id, al_srv_run *run,
			     al_srv_stored *out);
void al_srv_stored_clear(al_srv_stored *s);
/* Interrupts a live run (stop: and escalates to killing its tree when it
 * has not ended after the grace): 0, -EALREADY when finished, -EPERM when
 * a newer daemon owns it. */
int al_service_interrupt(al_service *svc, al_srv_run *run, bool stop);
/* Delivers an inbox event (docs/durability.md): 0 delivered, 1 already
 * delivered, -EALREADY finished, -EAGAIN not started yet, -EPERM
 * superseded, -ENOSPC inbox full, other negative errno: failure. */
int al_service_deliver(al_service *svc, al_srv_run *run, const char *id,
		       const char *event_json);
/* Starts the idle supervisors (after al_service_recover). */
int al_service_idle_start(al_service *svc);
/* Recovery at start-up: classifies every run directory, adopts live runs
 * (each gets a watcher thread), finishes the rest.  Call before the
 * listeners open. */
int al_service_recover(al_service *svc);
/* Interrupts every live run (shutdown past the grace). */
void al_service_interrupt_all(al_service *svc);
/* Runs of this tenant that pass filter, newest first, as a JSON document
 * text: {"runs": [...], "next_after": id|null}.  after: a run id cursor or
 * NULL.  -ENOENT when after is not a known run of the tenant.  Caller
 * frees. */
int al_service_list(al_service *svc, const char *tenant, size_t limit,
		    const char *after, const al_run_filter *filter,
		    char **out);
/* Notes the run's language (for the list and its filter). */
void al_service_set_language(al_service *svc, al_srv_run *run,
			     const char *language);

/* ---- shared by service.c and durable_run.c -------------------------- */

/* Records the end of a run (takes json) and drops the worker's refs. */
void al_service_publish(al_service *svc, al_srv_run *run, char *json,
			unsigned status, al_outcome outcome);
/* Announces the run id (waiters of POST /v1/runs wake up). */
void al_service_announce(al_srv_run *run, const char *run_id);
/* Buffers live output for subscribers (an al_outlog_fn). */
void al_service_output(void *run, int stream, const unsigned char *data,
		       size_t len);
/* Inserts a recovered run into the table (refs: table + returned). */
al_srv_run *al_service_insert(al_service *svc, al_srv_gen *gen,
			      const char *run_id, const char *tenant,
			      const char *principal, int64_t created_ms,
			      bool running);

/* What a finished run gives back: its idle supervisor, when it may serve
 * another run once it says so (docs/durability.md, "A supervisor that
 * serves several runs"). */
typedef struct al_durable_giveback {
	al_idle_lend lend;
	al_idle_sup *sup; /* NULL: nothing to give back */
	char run_id[40];
	al_drun *dr;	  /* finished, to clean up after the answer */
} al_durable_giveback;

/* durable_run.c: an admitted run through its supervisor to its final
 * result (JSON text; *status and *outcome for the table).  *gb: call
 * al_durable_give_back with it once the result is published. */
char *al_durable_execute(al_srv_run *run, al_admission *adm,
			 unsigned *status, al_outcome *outcome,
			 al_durable_giveback *gb);
/* After the run's answer: cleans up the run's records (the request
 * dropped, work files removed), waits for its supervisor's word that it
 * may serve another (a warm one makes its next sandbox first), then
 * returns it to the idle ones, or ends it. */
void al_durable_give_back(al_service *svc, al_durable_giveback *gb);
/* The watcher thread of a recovered live run. */
void *al_durable_adopted_main(void *arg);

/* HTTP status for a result's outcome (docs/api.md, "Status codes"). */
unsigned al_srv_status_for(al_outcome outcome, const char *reason);

#endif
