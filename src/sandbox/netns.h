/* Internal: network namespace setup inside the sandbox. */
#ifndef AL_SANDBOX_NETNS_H
#define AL_SANDBOX_NETNS_H

/* Brings the loopback interface of the current network namespace up.
 * Async-signal-safe.  Returns 0 or a negative errno. */
int al_sb_loopback_up(void);

#endif
