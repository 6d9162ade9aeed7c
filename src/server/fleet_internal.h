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
	pthread_t claimer, beater, chainer;
};

/* The HTTP status a stored result answers with (its outcome's). */
unsigned al_fleet_status_of(const char *result);

#endif
