/* Internal: the daemon's side of durable runs (docs/durability.md).
 *
 * Each admitted run gets a directory, STATE_DIR/runs/<id>/, and a
 * supervisor process (`airlock supervise`, exec'd from /proc/self/exe in
 * its own session and cgroup) that owns the provider's execution, its
 * deadline and its output files, and records the result atomically.  The
 * recovery record is persisted before the launch, so a daemon killed at
 * any moment leaves a state the next one classifies (al_durable_recover):
 * finished, live (adopted under the new epoch), or lost — never launched
 * twice. */
#ifndef AL_SERVER_DURABLE_H
#define AL_SERVER_DURABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <airlock/contract.h>
#include <airlock/error.h>

#include "supervisor/control.h"
#include "supervisor/outlog.h"
#include "supervisor/run_records.h"

typedef struct al_durable al_durable;
typedef struct al_drun al_drun;
typedef struct al_idle_sup al_idle_sup;

/* Opens STATE_DIR/runs, takes the next epoch and finds the cgroup base. */
int al_durable_open(const char *state_dir, al_durable **out, al_error **err);
void al_durable_close(al_durable *d);
uint64_t al_durable_epoch(const al_durable *d);
/* Starts making `count` run directories ahead (run_spares.h; the
 * "spare_run_dirs" setting); 0 makes none.  Stopped by
 * al_durable_close. */
int al_durable_spares_start(al_durable *d, unsigned count);
/* Run directories taken ready-made, and runs that found none. */
void al_durable_spares_counts(al_durable *d, unsigned long long *taken,
			      unsigned long long *missed);

/* ---- launching ------------------------------------------------------- */

typedef struct al_launch_spec {
	const char *run_id;
	const char *tenant;
	const char *principal;	     /* may be NULL */
	const char *provider;
	const char *provider_config; /* JSON object text or NULL */
	const char *provider_module; /* a provider module's path, or NULL */
	const char *request_json;    /* canonical */
	const char *facts_json;	     /* may be NULL */
	/* the granted host operations' definitions (docs/toolbelt.md), or
	 * NULL: persisted beside the record for the supervisor */
	const char *operations_json;
	const char *const *host_env; /* secrets, passed in memory only */
	size_t n_host_env;
	int64_t created_ms;
	int64_t deadline_ms;
	uint64_t build_cache_bytes; /* 0: no build cache */
	bool build_cache_shared;
	unsigned parallel; /* judged cases at once; 0 counts as 1 */
	/* An idle supervisor to hand the run to instead of starting one, or
	 * NULL.  The run takes its nonce and cgroup; al_drun_start takes it
	 * (whatever it returns), al_drun_create leaves it to the caller when
	 * it fails. */
	al_idle_sup *idle;
} al_launch_spec;

/* Creates the run directory and writes everything the supervisor and a
 * later daemon need (recovery.json last, whole, not yet synced: see
 * al_drun_make_durable).  The run stays locked until al_drun_start. */
int al_drun_create(al_durable *d, const al_launch_spec *spec, al_drun **out,
		   al_error **err);
/* Launches the supervisor, records its identity and unlocks the run.
 * The secrets go through an in-memory file, never the disk, argv or the
 * environment. */
int al_drun_start(al_drun *r, const al_launch_spec *spec, al_error **err);
/* Syncs the run's record and its directory (every entry: the record, the
 * inbox, the result's reserve).  Called once the supervisor is started
 * and before the run's id is given out, so the syncs overlap the run
 * (docs/durability.md, "The run directory"). */
int al_drun_make_durable(al_drun *r);

/* ---- idle supervisors (docs/durability.md, "Idle supervisors") ----- */

/* Starts `airlock supervise --idle --nonce N` in a cgroup of its own
 * (airlock-run-sup-<nonce>.<tag>), asks it to ensure the provider with
 * config_json (NULL: none) and waits up to ready_ms for it to say so.
 * It then waits on its socket for one run; when the socket ends (this
 * daemon gone) it exits without running anything and removes its
 * cgroup.  runs > 1: it may serve that many in sequence (the built-in
 * sandbox only; it decides): after each it says "ended" once the run's
 * result is recorded and its tree is gone (al_drun_wait), then "done"
 * once it may take another (al_idle_wait_done) and waits for it.  -EIO when it
 * could not ensure the provider. */
int al_idle_spawn(al_durable *d, const char *provider, const char *config_json,
		  unsigned runs, int ready_ms, al_idle_sup **out);
/* true when it may serve another run after the next one. */
bool al_idle_reusable(const al_idle_sup *s);
/* false once it ended (or its socket did). */
bool al_idle_alive(const al_idle_sup *s);
/* Ends an idle supervisor that was not handed a run: closes its socket,
 * waits (bounded) for it to go, reaps it, ends its cgroup. */
void al_idle_discard(al_idle_sup *s);
/* Removes the empty cgroups idle supervisors of this state directory
 * left when they were killed (a live one's is never empty). */
void al_durable_sweep_idle(al_durable *d);

/* true when the run went to an idle supervisor. */
bool al_drun_handed_off(const al_drun *r);
/* Once the run is finished: its idle supervisor when it said "ended" and
 * may serve another (the caller takes it: al_idle_wait_done, then
 * al_idle_discard or hand it a run), else NULL. */
al_idle_sup *al_drun_give_back(al_drun *r);
/* Waits up to timeout_ms for "done <run_id>" from a supervisor given
 * back: 0, -ETIMEDOUT, or -EPIPE (it said something else, or ended; our
 * side of its socket is closed then). */
int al_idle_wait_done(al_idle_sup *i, const char *run_id, int timeout_ms);

/* ---- watching -------------------------------------------------------- */

/* Waits up to timeout_ms for the supervisor to end: 1 ended (or was never
 * there), 0 still running. */
int al_drun_wait(al_drun *r, int timeout_ms);
/* Reads new complete output records (fn per record). */
int al_drun_tail(al_drun *r, al_outlog_fn fn, void *ctx);
/* true when a newer daemon holds the run's lease. */
bool al_drun_superseded(al_drun *r);
/* Asks the supervisor to interrupt or stop: -EPERM when superseded,
 * -ESRCH when it is not running (any more). */
int al_drun_control(al_drun *r, al_control_action action);
/* The stop's last resort: kills the supervisor and its whole tree and
 * waits until it is verified gone.  0, or -ETIMEDOUT. */
int al_drun_kill(al_drun *r);
/* Delivers an inbox event (from the moment al_drun_create returned; safe
 * beside the other calls): 0, 1 duplicate, -EPERM superseded, -EALREADY
 * the result is recorded, -ENOSPC inbox full. */
int al_drun_deliver(al_drun *r, const char *id, const char *event_json);

/* true while the supervisor holds a result the disk had no room for
 * (RUN/result.pending, no result.json yet): the outcome is known, the
 * run must be neither killed nor called lost. */
bool al_drun_result_pending(al_drun *r);
/* Once the supervisor ended: makes sure nothing of its tree is left, then
 * reads its recorded result (*res NULL when it recorded none). */
int al_drun_collect(al_drun *r, al_result **res);
/* The acknowledged inbox events, for a result the daemon makes itself. */
int al_drun_acked(al_drun *r, al_result *res);

/* ---- finishing (under the run's lock) -------------------------------- */

int al_drun_lock(al_drun *r);
void al_drun_unlock(al_drun *r);
/* final.json, the result the daemon acknowledged (-ENOENT when none). */
int al_drun_read_final(al_drun *r, char **json);
/* Marks that finishing began: 1 when it had begun before (a daemon died
 * part way: check the audit trail before writing run.finished again). */
int al_drun_mark_finishing(al_drun *r);
int al_drun_write_final(al_drun *r, const char *json);
/* Removes what only the execution needed (the request, the provider's
 * work directory, the cgroup); keeps records and the final result. */
void al_drun_cleanup(al_drun *r);
/* Of that, only the run's cgroup, when it is empty (al_drun_cleanup does
 * it too). */
void al_drun_remove_cgroup(al_drun *r);
/* Removes the whole run directory (retention). */
int al_durable_remove_run(al_durable *d, const char *run_id);
void al_drun_free(al_drun *r);

const al_recovery *al_drun_record(const al_drun *r);
const char *al_drun_id(const al_drun *r);
/* The persisted request and facts (recovery), caller frees. */
int al_drun_read_request(al_drun *r, char **request_json, char **facts_json);

/* ---- recovery -------------------------------------------------------- */

typedef enum al_recovered {
	AL_RECOVERED_FINAL = 0, /* final.json: finished and acknowledged */
	AL_RECOVERED_RESULT,	/* a result is recorded: finish it */
	AL_RECOVERED_LIVE,	/* live and verified: adopted (new lease) */
	AL_RECOVERED_FOREIGN,	/* live, a newer epoch holds it: watch only */
	AL_RECOVERED_LOST,	/* dead without a result: its tree is gone */
	AL_RECOVERED_TAMPERED	/* unreadable records: finished as lost,
				   but no tenant can be named */
} al_recovered;

/* The run ids under STATE_DIR/runs (caller frees with al_strv_free). */
int al_durable_list(al_durable *d, char ***ids, size_t *n);
/* The run's directory, locked (closing an audited start at recovery):
 * -ENOENT when the run has none. */
int al_durable_open_run(al_durable *d, const char *run_id, al_drun **out);
/* The runs directory (STATE/runs), for the carry-over of inbox events
 * (server/carry.h). */
int al_durable_runs_fd(const al_durable *d);
/* The run's directory (its creator holds the run's lock until it is
 * launched). */
int al_drun_dirfd(const al_drun *r);
/* true while a live process (a supervisor, an `airlock run`) holds the
 * run's artifact store. */
bool al_durable_run_held(al_durable *d, const char *run_id);
/* Where recovery's next search of the audit trail for starts without an
 * end may begin (STATE_DIR/audit.mark, written atomically: a lost or
 * stale one only makes a search longer).  NULL when none. */
char *al_durable_mark_read(al_durable *d);
int al_durable_mark_write(al_durable *d, const char *mark);
/* Classifies one run (under its lock) and, for a live one, adopts it. */
int al_durable_recover(al_durable *d, const char *run_id, al_drun **out,
		       al_recovered *kind);

#endif
