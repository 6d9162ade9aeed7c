/* Internal: the fleet node's state, shared by fleet.c (claiming,
 * following runs, leases) and fleet_http.c (the routes). */
#ifndef AL_SERVER_FLEET_INTERNAL_H
#define AL_SERVER_FLEET_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/fleet.h"
#include "store/store.h"

struct al_fleet {
	al_service *svc;
	al_store *st;
	char node[64];
	char host[256];
	char *facts; /* published selection facts (JSON) */
	char *langs; /* the languages it runs: a JSON array (claims) */
	char boot_id[64]; /* this boot of this host ("" unknown) */
	bool adopt;	  /* fleet.adopt: take over same-host dead nodes' runs */
	/* fleet.artifacts_dir: shared storage; artifacts are copied to
	 * ROOT/artifacts/<run>/ before the result is recorded.  NULL: none. */
	char *artifacts_root;
	uint64_t lease_ms, heartbeat_ms;
	unsigned slots; /* runs this node executes at once */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* executing dropped, stopping */
	unsigned executing;  /* claimed runs not yet recorded */
	char (*ids)[40];     /* their ids (executing of them) */
	size_t cap_ids;
	bool stopping, abandon, claiming, beating, chaining;
	bool reconcile; /* claimer: a claim's answer was lost */
	/* Claim queries (of them: polls, the safety poll's; claim_errors,
	 * the store's refusals), runs claimed. */
	unsigned long long claims, polls, claim_errors, claimed;
	/* Forwarded environments of queued runs pinned to this node
	 * (X-Airlock-Forwarded-Env): only ever in this memory, wiped when
	 * taken or dropped.  Under lock. */
	struct al_fleet_pin {
		char run_id[40];
		char *env;
	} *pins;
	size_t n_pins, cap_pins;
	pthread_t claimer, beater, chainer;
};

/* Keeps a pinned run's forwarded environment (a copy) until its claim;
 * -EADDRINUSE when this node already holds one for the id. */
int al_fleet_pin_add(al_fleet *f, const char *run_id, const char *env);
/* Takes it back (NULL: none); the caller wipes and frees it. */
char *al_fleet_pin_take(al_fleet *f, const char *run_id);

/* The HTTP status a stored result answers with (its outcome's). */
unsigned al_fleet_status_of(const char *result);

#endif
