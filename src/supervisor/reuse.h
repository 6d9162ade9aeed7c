/* Internal: what an idle supervisor that serves several runs in sequence
 * checks and renews between them (docs/durability.md, "A supervisor that
 * serves several runs").
 *
 * A supervisor takes another run only when, after the last one, its own
 * cgroup holds nothing but itself (the run's whole tree reaped), it holds
 * exactly the descriptors it held before that run, and its provider
 * handle is healthy.  Each run has a nonce of its own: the supervisor
 * writes it over the nonce in its argument vector, so the identity check
 * (pid, start time, the nonce in /proc/PID/cmdline) names one run at a
 * time and a stale identity of an earlier run never verifies. */
#ifndef AL_SUPERVISOR_REUSE_H
#define AL_SUPERVISOR_REUSE_H

#include <stdbool.h>

/* Runs one idle supervisor serves before it exits and the daemon starts
 * a fresh one: bounds how long one address space (heap, the provider
 * handle's state, its layout) lives across runs, while the start-up it
 * saves is spread over enough runs to be negligible per run. */
#define AL_SUP_RUNS_MAX 16

/* The open descriptors of this process (a bitmap of the first 1024). */
typedef struct al_fdset {
	unsigned long bits[1024 / (8 * sizeof(unsigned long))];
	bool over; /* one at or above 1024: never equal */
} al_fdset;

int al_reuse_fds(al_fdset *out);
bool al_reuse_fds_same(const al_fdset *a, const al_fdset *b);

/* true when this process's cgroup is an idle supervisor's
 * (airlock-run-sup-*), holds no process but this one, and every cgroup
 * beneath it is empty (those are removed). */
bool al_reuse_tree_alone(void);

/* Takes any signal still pending for the process (a doorbell rung for
 * the run that ended), so none reaches the next run. */
void al_reuse_drain_signals(void);

/* Writes nonce over argv_nonce (a string of the argument vector, the
 * same length): /proc/PID/cmdline shows it from now on. */
void al_reuse_set_nonce(char *argv_nonce, const char *nonce);

#endif
