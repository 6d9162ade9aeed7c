/* Internal: a network namespace made ahead of a cold run.
 *
 * A new network namespace is the costliest namespace to make (the
 * kernel registers every per-namespace subsystem: loopback, sysctls,
 * IPv4 and IPv6 state), and a cold launch made it in clone3 on the run's
 * path.  A root provider handle keeps one made ahead instead: a helper
 * thread unshares a fresh one and hands over its descriptor, and a cold
 * launch's init joins it (setns) before anything else, in place of
 * CLONE_NEWNET.  Each namespace serves exactly one run, and nothing ever
 * ran in it: the helper thread only opens it and exits.  As made by
 * clone3 in a root launch, it is owned by the initial user namespace
 * (the run's own user namespace, made later by the init, owns none of
 * its namespaces).  Unprivileged, nothing is made ahead (unsharing a
 * network namespace needs CAP_SYS_ADMIN). */
#ifndef AL_SANDBOX_NETNS_AHEAD_H
#define AL_SANDBOX_NETNS_AHEAD_H

#include <pthread.h>
#include <stdbool.h>

typedef struct al_sb_netns_ahead {
	pthread_mutex_t lock;
	int fd;		 /* the namespace made ahead, or -1 */
	bool fresh;	 /* fd made since the last settle */
	bool making;	 /* the helper thread runs (maker is joinable) */
	bool enabled;	 /* root: made ahead at all */
	pthread_t maker;
	unsigned long long taken, missed;
} al_sb_netns_ahead;

/* enabled: whether namespaces are made ahead (root only). */
void al_sb_netns_ahead_init(al_sb_netns_ahead *a, bool enabled);
/* The namespace made ahead (the caller owns the descriptor), or -1 when
 * none is ready: the launch then makes its own.  A helper that has
 * finished is joined first; one still running is not waited for. */
int al_sb_netns_ahead_take(al_sb_netns_ahead *a);
/* Starts a helper for the next one, unless one is held or being made
 * (after a run: its descriptors are closed by then).  A supervisor
 * between runs waits for it (al_sb_netns_ahead_wait) before it makes
 * its warm members: a helper opening its descriptor meanwhile would move
 * theirs. */
void al_sb_netns_ahead_refill(al_sb_netns_ahead *a);
/* Waits for a helper still running (joined; what it made is held). */
void al_sb_netns_ahead_wait(al_sb_netns_ahead *a);
/* Waits for a helper still running and, when none is ready, makes one
 * now: afterwards the handle holds one descriptor and no helper thread
 * (a supervisor between runs compares its descriptors and threads).  A
 * descriptor made since the last settle is moved to the lowest free
 * number from 256 up, clear of those the process opens and closes as it
 * runs; one held since stays at its own. */
void al_sb_netns_ahead_settle(al_sb_netns_ahead *a);
/* Joins the helper and closes what is held. */
void al_sb_netns_ahead_clear(al_sb_netns_ahead *a);

/* A sandbox provider handle's counts: cold launches that joined a
 * namespace made ahead, and those that found none ready (both 0 where
 * nothing is made ahead). */
struct al_provider_handle;
void al_sb_provider_netns_stats(struct al_provider_handle *h,
				unsigned long long *taken,
				unsigned long long *missed);

#endif
