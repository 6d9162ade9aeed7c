/* Internal: an airlockd node of a fleet (docs/scale-out.md).  With
 * "store": "postgresql://..." a submission is queued in the store and
 * claimed by exactly one node, which runs it through its own durable
 * pipeline and writes its events and result back; any node answers for
 * any run.  Without it (the default, "sqlite") nothing here runs. */
#ifndef AL_SERVER_FLEET_H
#define AL_SERVER_FLEET_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#include <airlock/error.h>

#include "store/store.h"

typedef struct al_service al_service;
typedef struct al_fleet al_fleet;

/* Starts the node when the configuration names a fleet store (else
 * leaves svc->fleet NULL): connects, migrates, settles what the store
 * has as running on this node, then heartbeats and claims.  Call after
 * al_service_recover. */
int al_fleet_start(al_service *svc, al_error **err);
/* Stops claiming (draining); runs already claimed go on. */
void al_fleet_stop(al_service *svc);
/* Waits (bounded) for the claimed runs to be recorded, then frees.
 * false when some are still going (the node is left to them). */
bool al_fleet_free(al_service *svc);

/* The routes a fleet node answers from the store. */
/* asked_run_id, fwd_env: X-Airlock-Run-Id, X-Airlock-Forwarded-Env
 * (docs/api.md), or NULL. */
enum MHD_Result al_fleet_post(al_service *svc, struct MHD_Connection *conn,
			      const char *tenant, const char *principal,
			      const char *body, size_t len, bool wait,
			      const char *asked_run_id, const char *fwd_env);
/* GET /v1/runs/{id}, its events, interrupt: for a run this node's table
 * does not hold.  kind: 'g' get, 'e' events, 'i' interrupt. */
enum MHD_Result al_fleet_run(al_service *svc, struct MHD_Connection *conn,
			     char kind, const char *tenant,
			     const char *run_id);
/* An inbox event for a run this node's table does not hold. */
enum MHD_Result al_fleet_inbox(al_service *svc, struct MHD_Connection *conn,
			       const char *tenant, const char *run_id,
			       const char *id, const char *event);

/* GET /v1/runs on a fleet node: the tenant's runs of the whole fleet,
 * from the store (the query already checked). */
struct al_run_filter;
enum MHD_Result al_fleet_list(al_service *svc, struct MHD_Connection *conn,
			      const char *tenant, size_t limit,
			      const char *after,
			      const struct al_run_filter *filter);

/* The shared artifact root (fleet.artifacts_dir) when the store has the
 * run as this tenant's, else NULL: a run another node executed. */
const char *al_fleet_artifacts_root(al_service *svc, const char *tenant,
				    const char *run_id);

#endif
