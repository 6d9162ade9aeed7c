/* Internal: what an idle supervisor that serves several runs in sequence
 * checks and renews between them (docs/durability.md, "A supervisor that
 * serves several runs").
 *
 * A supervisor takes another run only when, after the last one, its own
 * cgroup holds nothing but itself (the run's whole tree reaped), it holds
 * exactly the descriptors, threads and environment it held before that
 * run, and its provider handle is healthy.  Each run has a nonce of its own: the supervisor
 * writes it over the nonce in its argument vector, so the identity check
 * (pid, start time, the nonce in /proc/PID/cmdline) names one run at a
 * time and a stale identity of an earlier run never verifies. */
#ifndef AL_SUPERVISOR_REUSE_H
#define AL_SUPERVISOR_REUSE_H

#include <stdbool.h>
#include <stddef.h>

/* Runs one idle supervisor serves before it exits and the daemon starts
 * a fresh one: bounds how long one address space (heap, the provider
 * handle's state, its layout) lives across runs, while the start-up it
 * saves is spread over enough runs to be negligible per run. */
#define AL_SUP_RUNS_MAX 64

/* What a run must leave as it found it: the open descriptors (a bitmap
 * of the first 1024), the number of threads and the environment (a
 * digest of every string). */
typedef struct al_reuse_state {
	unsigned long bits[1024 / (8 * sizeof(unsigned long))];
	bool over; /* a descriptor at or above 1024: never equal */
	unsigned threads;
	char env[65];
} al_reuse_state;

int al_reuse_snapshot(al_reuse_state *out);
/* NULL when equal, else what differs ("descriptors", ...). */
const char *al_reuse_differs(const al_reuse_state *before,
			     const al_reuse_state *after);

/* The cgroups right beneath the supervisor's own that hold its warm
 * sandbox's members (names, not paths), made after the run ended. */
#define AL_REUSE_KEEP_MAX 4
typedef struct al_reuse_keep {
	char names[AL_REUSE_KEEP_MAX][96];
	size_t n;
} al_reuse_keep;

/* true when this process's cgroup is an idle supervisor's
 * (airlock-run-sup-*), holds no process but this one, and every cgroup
 * beneath it is empty (those are removed) but the kept ones (keep: NULL
 * for none), each of which must be there. */
bool al_reuse_tree_alone(const al_reuse_keep *keep);

/* Takes any signal still pending for the process (a doorbell rung for
 * the run that ended), so none reaches the next run. */
void al_reuse_drain_signals(void);

/* Writes nonce over argv_nonce (a string of the argument vector, the
 * same length): /proc/PID/cmdline shows it from now on. */
void al_reuse_set_nonce(char *argv_nonce, const char *nonce);

#endif
