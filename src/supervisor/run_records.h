/* Internal: a durable run's directory, STATE_DIR/runs/<id>/ (mode 0700),
 * and the records in it (docs/durability.md, "The run directory").
 *
 * recovery.json, the one record before the launch, is written (fsync,
 * rename, fsync dir) before the supervisor is launched; it is rewritten
 * only to rebind an idle supervisor's run cold and, once the run is
 * finished, without its request.  identity.json once the launch is
 * known; lease, written on adoption, the epoch of the daemon that owns
 * the run now.  Everything a daemon reads back is validated: a record that does
 * not parse, names another run or carries a malformed nonce is tampered. */
#ifndef AL_SUPERVISOR_RUN_RECORDS_H
#define AL_SUPERVISOR_RUN_RECORDS_H

#include <stdbool.h>
#include <stdint.h>

#include "supervisor/identity.h"

#define AL_RUNS_DIR "runs"

#define AL_RF_RECOVERY "recovery.json"
#define AL_RF_IDENTITY "identity.json"
#define AL_RF_LEASE "lease"
#define AL_RF_CONTROL "control.json"
#define AL_RF_OUTPUT "output"
#define AL_RF_RESULT "result.json"
/* An interactive run's live stdin: a FIFO the daemon writes */
#define AL_RF_STDIN "stdin"
/* The supervisor holds a result it cannot write yet (a full disk). */
#define AL_RF_PENDING "result.pending"
/* result.json's space, taken before the run starts. */
#define AL_RF_RESERVE ".result.reserve"
/* The result's space: the daemon makes it with the run's records, so its
 * entry is durable at launch (docs/durability.md, "The run directory") */
#define AL_RF_RESERVE_BYTES (64u * 1024u)
#define AL_RF_FINISHING "finishing"
/* The run's artifact store made ahead with a spare run directory: the
 * supervisor moves it to STATE_DIR/artifacts (docs/durability.md, "Run
 * directories made ahead"); one left unused goes at the clean-up. */
#define AL_RF_STORE_AHEAD ".artifacts"
#define AL_RF_FINAL "final.json"
#define AL_RF_LOG "supervisor.log"
#define AL_RF_PROVIDER_ERROR "provider_error.json"
#define AL_RF_INBOX "inbox"
#define AL_RF_ACKS "acks"
#define AL_RF_WORK "work"
/* Where the provider's run directory of a durable run goes instead of
 * RUN/work: the per-boot tmpfs for the built-in sandbox, whose run
 * directory holds only what the host wrote (a rw /workspace is a tmpfs
 * of its own), so nothing in it needs to outlive a reboot, which no run
 * outlives; NULL: RUN/work, on the state directory.  The daemon removes
 * a killed provider's leftover there when it cleans the run up. */
const char *al_run_work_tmpfs(const char *provider, const char *module);

/* Bound for records read back (results carry captured output). */
#define AL_RF_MAX_RUNREC (4u * 16u * 1024u * 1024u + 256u * 1024u)
#define AL_RF_MAX_RECORD (512u * 1024u * 1024u)
#define AL_RF_MAX_SMALL (64u * 1024u)

/* The run's one record before the launch (docs/durability.md): the
 * recovery fields, and what the supervisor and a resuming daemon need —
 * the canonical request (dropped once the run is finished), the
 * provider's configuration and facts at selection.  The lease is not in
 * it: the launching daemon's epoch is the lease until an adopting daemon
 * writes RUN/lease. */
typedef struct al_recovery {
	char run_id[40];
	char nonce[AL_NONCE_HEX + 1];
	/* A run handed to an idle supervisor that served an earlier run: the
	 * nonce its cgroup is named by (airlock-run-sup-<it>.<tag>), which is
	 * not this run's nonce.  "" when the cgroup is named by the run's id
	 * or its own nonce. */
	char sup_nonce[AL_NONCE_HEX + 1];
	char *tenant;
	char *principal;     /* NULL when none */
	char *provider;
	char *cgroup;	     /* the run's cgroup dir, NULL when none */
	uint64_t epoch;	     /* of the daemon that launched it */
	int64_t created_ms;  /* when the request was admitted */
	int64_t deadline_ms; /* absolute CLOCK_REALTIME ms */
	char *request;	     /* canonical text; NULL once finished */
	char *config;	     /* the provider's configuration text, or NULL */
	char *module;	     /* the provider module's path, or NULL */
	char *facts;	     /* the provider's facts text, or NULL */
	/* Compiled languages and judged cases (docs/languages.md): the
	 * configured build cache (bytes 0: off) and how many cases may run
	 * at once.  Absent in older records: off, 1. */
	uint64_t build_cache_bytes;
	bool build_cache_shared;
	unsigned parallel;
} al_recovery;

void al_recovery_clear(al_recovery *r);
/* Temp file, fsync, rename, directory sync: whole or absent for a reader
 * (a rename replaces a rebound record atomically too). */
int al_recovery_write(int dirfd, const al_recovery *r);
/* The same without the syncs (temp file, rename): whole or absent for a
 * reader while the machine runs; al_record_file_sync_named then makes it
 * durable. */
int al_recovery_write_unsynced(int dirfd, const al_recovery *r);
/* The record without its request, atomically, not synced (a machine
 * crash may keep the request, as an unlink would). */
int al_recovery_drop_request(int dirfd, al_recovery *r);
/* -ENOENT when absent, -EBADMSG when malformed or not this run's. */
int al_recovery_read(int dirfd, const char *run_id, al_recovery *r);

/* The epoch that owns the run: RUN/lease when an adopting daemon wrote
 * one, else the launching daemon's (r->epoch). */
int al_lease_read(int dirfd, const al_recovery *r, uint64_t *lease);

int al_identity_write(int dirfd, const al_identity *id);
int al_identity_read(int dirfd, al_identity *id);

/* A run id as the host makes them: 1..39 of [A-Za-z0-9_-]. */
bool al_run_id_valid(const char *s);

/* STATE_DIR/runs (created 0700). */
int al_runs_dir_open(const char *state_dir, int *fd);
/* RUN under runs_fd; create: a new one (mode 0700, EEXIST when taken). */
int al_run_dir_open(int runs_fd, const char *run_id, bool create, int *fd);

/* The state directory's epoch counter (STATE_DIR/epoch, under
 * STATE_DIR/epoch.lock): incremented and durably stored by every daemon
 * start. */
int al_epoch_next(const char *state_dir, uint64_t *out);

#endif
