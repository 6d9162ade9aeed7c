/* Internal: the per-run supervisor process (`airlock --state-dir DIR
 * supervise --run ID --nonce HEX [--secrets-fd 3]`; docs/durability.md).
 *
 * Started by the daemon in its own session and cgroup, it does not die
 * with the daemon.  It reads the run's request and the selected provider's
 * configuration from the run directory (the secrets from an in-memory
 * file on fd 3), ensures the provider and executes the exact validated
 * request on it, appends live output to RUN/output, enforces the run's
 * persisted deadline (an absolute CLOCK_REALTIME time, so it keeps
 * counting whatever happens to the daemon), obeys interrupt and stop
 * requests whose epoch is current, and records the result atomically
 * (RUN/result.json, with the acknowledged inbox events). */
#ifndef AL_SUPERVISOR_SUPERVISOR_H
#define AL_SUPERVISOR_SUPERVISOR_H

/* Runs the supervisor; returns the process exit status (0: a result was
 * recorded). */
int al_supervisor_main(const char *state_dir, const char *run_id,
		       const char *nonce, int secrets_fd);

/* An idle supervisor (`airlock --state-dir DIR supervise --idle --nonce
 * HEX`, docs/durability.md "Idle supervisors"): on sock (a SEQPACKET
 * socket to the daemon) it gets the provider to ensure and answers
 * "ready", then waits for one run ("run <id> <nonce>" with the run's log
 * and secrets as SCM_RIGHTS) and supervises it as al_supervisor_main
 * would.  Told it may serve several ("runs" in the first message), it
 * then says "done <id>" and waits for the next (reuse.h).  nonce is the
 * nonce's string in the argument vector: each run's is written over it.  At the end of the socket before a run it releases the provider,
 * removes its own cgroup and exits 0 without running anything. */
int al_supervisor_idle_main(const char *state_dir, char *nonce, int sock);

#endif
