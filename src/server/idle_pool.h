/* Internal: the daemon's idle supervisors (docs/durability.md, "Idle
 * supervisors").
 *
 * A background thread keeps supervisors started ahead of the runs: each
 * is exec'd, has ensured the provider and waits on its socket.  A run
 * takes one that matches its provider, configuration and language, and
 * is handed to it instead of starting a supervisor of its own.  Targets
 * come from the configuration: `idle_supervisors` generic ones for the
 * first candidate, and for each language in the sandbox candidate's
 * `pool` that many warm ones, each ensuring the sandbox with the pool
 * narrowed to that language (its settings kept), size 1 and "refill": false
 * (so it holds one warm sandbox).
 * Refilling stops while runs in flight + idle supervisors reach
 * concurrency + the number kept.  The generic number grows by one when a
 * run finds all of them lent (up to concurrency) and shrinks back to the
 * configured one a minute after runs stop missing. */
#ifndef AL_SERVER_IDLE_POOL_H
#define AL_SERVER_IDLE_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host/config.h"
#include "server/durable.h"

typedef struct al_idle_pool al_idle_pool;

/* busy(ctx): the runs in flight (not finished).  Starts the thread. */
int al_idle_pool_new(al_durable *d, unsigned (*busy)(void *ctx), void *ctx,
		     al_idle_pool **out);
/* Ends the thread and every idle supervisor. */
void al_idle_pool_free(al_idle_pool *p);
/* New targets from a configuration; idle supervisors of the previous
 * one are ended. */
int al_idle_pool_configure(al_idle_pool *p, const al_config *cfg);
/* A supervisor taken that serves another run after this one stays
 * counted in its target until it is returned (al_idle_pool_return). */
typedef struct al_idle_lend {
	bool active;
	size_t target;
	uint64_t gen;
} al_idle_lend;
/* An idle supervisor for this run, or NULL (start one cold).  A warm one
 * of the language first (*warm true), else a generic one.  *lend: call
 * al_idle_pool_return with it once the run is finished. */
al_idle_sup *al_idle_pool_take(al_idle_pool *p, const char *provider,
			       const char *config_json, const char *language,
			       bool *warm, al_idle_lend *lend);
/* After the run: sup is the supervisor al_drun_give_back returned (or
 * NULL when it is not coming back).  It is ready again when it still
 * serves this configuration; else it is ended (and a replacement may
 * start). */
void al_idle_pool_return(al_idle_pool *p, al_idle_lend *lend,
			 al_idle_sup *sup);
/* Counts a launch: handed to an idle supervisor (warm: one of a
 * language's pool) or started cold. */
void al_idle_pool_count(al_idle_pool *p, bool handed, bool warm);

typedef struct al_idle_stats {
	unsigned ready;	    /* idle supervisors waiting now */
	unsigned ready_warm; /* of which a language's */
	uint64_t handoffs;   /* runs handed to an idle supervisor */
	uint64_t reused;     /* supervisors ready again after a run */
	uint64_t handoffs_warm;
	uint64_t cold;	     /* runs that started their own */
	uint64_t spawned;    /* idle supervisors started */
	uint64_t failed;     /* that did not become ready */
	unsigned wanted_generic; /* generic ones kept now (grown or not) */
	unsigned wanted_warm;	 /* warm ones kept now, every language */
} al_idle_stats;
void al_idle_pool_stats(al_idle_pool *p, al_idle_stats *st);

#endif
