/* Internal: who a supervisor is, beyond its pid.
 *
 * A supervisor is the process whose pid and start time (field 22 of
 * /proc/PID/stat, in clock ticks since boot) were recorded at launch AND
 * whose argument vector carries the run's nonce (`supervise ... --nonce
 * HEX`).  A recycled pid has another start time and no nonce, so it is
 * never adopted or signalled.  Signals go through a pidfd opened before
 * the check, so the process checked is the process signalled. */
#ifndef AL_SUPERVISOR_IDENTITY_H
#define AL_SUPERVISOR_IDENTITY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct al_identity {
	pid_t pid;
	uint64_t starttime;
} al_identity;

#define AL_NONCE_HEX 32 /* 16 random bytes */

/* A fresh nonce (lower-case hex) into out[AL_NONCE_HEX + 1]. */
int al_nonce_new(char out[AL_NONCE_HEX + 1]);
bool al_nonce_valid(const char *s);

/* Start time and state letter of a pid; -ESRCH when there is none. */
int al_proc_stat(pid_t pid, uint64_t *starttime, char *state);
/* true when pid's argv is a supervisor's carrying exactly this nonce. */
bool al_proc_has_nonce(pid_t pid, const char *nonce);

/* 0 when id names a live (not zombie) supervisor with this nonce, else
 * -ESRCH. */
int al_identity_verify(const al_identity *id, const char *nonce);
/* A pidfd of the verified supervisor (-ESRCH when it is not one; -ENOSYS
 * when the kernel has no pidfds). */
int al_identity_pidfd(const al_identity *id, const char *nonce, int *pidfd);
/* Opens a pidfd, verifies, then signals through it: race-free. */
int al_identity_signal(const al_identity *id, const char *nonce, int sig);
/* Looks through /proc for a live supervisor carrying the nonce (a launch
 * whose identity was never recorded).  0 and *out, or -ESRCH. */
int al_identity_scan(const char *nonce, al_identity *out);

#endif
