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

#include "server/auth.h"
#include "server/metrics.h"

/* A configuration generation: runs keep the host they started on, so a
 * reload never pulls a host from under a live run. */
typedef struct al_srv_gen {
	unsigned refs; /* under service lock */
	al_config *cfg;
	al_host *host;
	al_auth *auth;
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
	char *result_json; /* when done */
	unsigned status;   /* HTTP status of the result, when done */
	al_outcome outcome;
	al_cancel *cancel;
	al_srv_gen *gen;
	char *body; /* the request text, freed once the run starts */
	size_t body_len;
	/* Live output kept for late subscribers: events [0, n_events) carry
	 * seq first_seq.., oldest dropped first past the byte bound. */
	al_srv_event *events;
	size_t n_events, cap_events, event_bytes;
	uint64_t next_seq;
	pthread_cond_t changed; /* id known, event, done */
} al_srv_run;

struct al_service {
	pthread_mutex_t lock;
	pthread_cond_t idle; /* a worker ended */
	al_server_options opts;
	al_srv_gen *gen; /* current */
	al_srv_metrics *metrics;
	al_srv_run *newest, *oldest;
	size_t n_runs;
	unsigned active;  /* runs not done */
	unsigned workers; /* worker threads alive */
	unsigned requests; /* HTTP requests past their headers, not ended */
	bool draining;	  /* refuse new runs */
	bool closing;	  /* wake and end every waiter */
};

/* Bounds of the in-memory table and event buffers. */
#define AL_SRV_MAX_RUNS 4096u
#define AL_SRV_MAX_EVENT_BYTES (1024u * 1024u)
#define AL_SRV_MAX_EVENTS 8192u

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
int al_service_submit(al_service *svc, al_srv_gen *gen, const char *tenant,
		      const char *principal, const char *body, size_t len,
		      al_srv_run **out);
/* Waits until the run has an id or is done (wait_done: until done), or the
 * service closes.  Returns with the lock NOT held. */
void al_service_wait(al_service *svc, al_srv_run *run, bool wait_done);
/* A referenced run of this tenant, or NULL (unknown and foreign alike). */
al_srv_run *al_service_find(al_service *svc, const char *tenant,
			    const char *run_id);
void al_service_run_put(al_service *svc, al_srv_run *run);
/* Interrupts a live run: 0, -EALREADY when finished. */
int al_service_interrupt(al_service *svc, al_srv_run *run);
/* Interrupts every live run (shutdown past the grace). */
void al_service_interrupt_all(al_service *svc);
/* Runs of this tenant, newest first, as a JSON document text:
 * {"runs": [...], "next_after": id|null}.  after: a run id cursor or NULL.
 * -ENOENT when after is not a known run of the tenant.  Caller frees. */
int al_service_list(al_service *svc, const char *tenant, size_t limit,
		    const char *after, char **out);

/* HTTP status for a result's outcome (docs/api.md, "Status codes"). */
unsigned al_srv_status_for(al_outcome outcome, const char *reason);

#endif
