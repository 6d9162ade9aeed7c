/* Internal: the host's state, shared by host.c's pipeline pieces. */
#ifndef AL_HOST_HOST_INTERNAL_H
#define AL_HOST_HOST_INTERNAL_H

#include <pthread.h>

#include <airlock/host.h>

#include "host/config.h"
#include "host/db.h"
#include "host/idempotency.h"
#include "host/metrics.h"
#include "host/select.h"
#include "host/slots.h"
#include "child/artifacts.h"

/* One execution handed to a worker thread.  Reference-counted: the host
 * may stop waiting (deadline) while the worker still runs, and an
 * interrupt may hold it briefly; the last reference frees it. */
typedef struct run_exec {
	pthread_mutex_t lock;
	unsigned refs;
	bool done, abandoned;
	int exec_rc;
	int efd; /* eventfd: the worker finished */
	al_host *host;
	al_handle_ref *ref; /* held by the worker until execute returns */
	al_request *req;    /* the worker's own copy */
	char run_id[40];
	al_cancel *cancel;
	char **host_env; /* resolved secrets, wiped on free */
	size_t n_host_env;
	al_result *res;
	al_output_fn on_output;
	void *on_output_ctx;
	/* The request's bundle and manifest, and the run's artifact store
	 * (locked while the run lives; docs/workspaces.md). */
	al_bundle *bundle;
	al_manifest *manifest;
	al_artifact_store store;
	/* The run's toolbelt (host/host_toolbelt.h), or NULL: copies the
	 * worker keeps for as long as it may run. */
	char *tool_dir, *tool_bin, *tool_token;
	/* The build cache the run may use, or NULL; judged cases run this
	 * many at a time (the run's slot and the extra ones taken). */
	char *build_cache_dir;
	unsigned parallel;
} run_exec;

typedef struct live_run {
	char run_id[40];
	char tenant[65];
	run_exec *x;
	struct live_run *next;
} live_run;

struct al_host {
	al_config *cfg; /* the host's own copy */
	char *state_dir;
	al_db *db;
	al_idem *idem;
	al_slots *slots;
	al_metrics *metrics;
	al_selector sel;
	bool sel_ready;
	pthread_mutex_t lock; /* live, workers */
	pthread_cond_t workers_cond;
	unsigned workers; /* worker threads not yet returned */
	live_run *live;
};

#endif
