/* Internal: Landlock for the sandboxed program (raw syscalls; rights
 * masked to the kernel's ABI). */
#ifndef AL_SANDBOX_LANDLOCK_H
#define AL_SANDBOX_LANDLOCK_H

#include <stdbool.h>

/* The kernel's Landlock ABI version, 0 when absent or disabled. */
int al_sb_landlock_abi(void);

typedef struct al_sb_landlock_spec {
	int abi;		/* from al_sb_landlock_abi(); 0 = skip */
	bool workspace_rw;	/* /workspace writable */
	bool build_rw;		/* /build writable (build step) */
	bool inbox_acks_rw;	/* /inbox-acks writable (durable runs) */
	bool deny_tcp;		/* handle TCP bind/connect with no rule */
} al_sb_landlock_spec;

/* Restricts the calling process (no_new_privs must be set), paths as seen
 * after pivot_root: read/execute everywhere in the sandbox root, write
 * only to /tmp, /dev/shm, the /dev nodes, /workspace when rw and
 * /inbox-acks when the run has an inbox; signals
 * and abstract unix sockets scoped to the sandboxed program (ABI >= 6).
 * Async-signal-safe.  Returns 0 or a negative errno. */
int al_sb_landlock_apply(const al_sb_landlock_spec *spec);

#endif
