/* A network namespace made ahead of a cold run (see netns_ahead.h). */
#include "sandbox/netns_ahead.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <unistd.h>

/* Where a namespace's descriptor is kept: above those a process opens
 * and closes as it runs (a process whose descriptor limit is lower keeps
 * it where it was opened). */
#define FD_BASE 256

/* The helper thread: a fresh namespace of its own, opened, and the
 * thread gone (its namespace switch goes with it; no other thread's is
 * ever touched).  Returns the descriptor, or -1. */
static void *make_one(void *arg)
{
	(void)arg;
	int fd = -1;
	if (unshare(CLONE_NEWNET) == 0)
		fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	return (void *)(intptr_t)fd;
}

/* Under the lock: joins the helper when it is done (or waits for it). */
static void reap(al_sb_netns_ahead *a, bool wait)
{
	if (!a->making)
		return;
	void *out = NULL;
	int rc = wait ? pthread_join(a->maker, &out)
		      : pthread_tryjoin_np(a->maker, &out);
	if (rc != 0)
		return; /* still running */
	a->making = false;
	int fd = (int)(intptr_t)out;
	if (fd >= 0 && a->fd < 0) {
		a->fd = fd;
		a->fresh = true;
	} else if (fd >= 0) {
		close(fd);
	}
}

/* Under the lock: a helper for the next one, when none is held or being
 * made. */
static void start(al_sb_netns_ahead *a)
{
	if (!a->enabled || a->making || a->fd >= 0)
		return;
	a->making = pthread_create(&a->maker, NULL, make_one, NULL) == 0;
}

void al_sb_netns_ahead_init(al_sb_netns_ahead *a, bool enabled)
{
	pthread_mutex_init(&a->lock, NULL);
	a->fd = -1;
	a->fresh = false;
	a->making = false;
	a->enabled = enabled;
	a->taken = a->missed = 0;
}

int al_sb_netns_ahead_take(al_sb_netns_ahead *a)
{
	pthread_mutex_lock(&a->lock);
	reap(a, false);
	int fd = a->fd;
	a->fd = -1;
	if (a->enabled) {
		if (fd >= 0)
			a->taken++;
		else
			a->missed++;
	}
	pthread_mutex_unlock(&a->lock);
	return fd;
}

void al_sb_netns_ahead_refill(al_sb_netns_ahead *a)
{
	pthread_mutex_lock(&a->lock);
	reap(a, false);
	start(a);
	pthread_mutex_unlock(&a->lock);
}

void al_sb_netns_ahead_wait(al_sb_netns_ahead *a)
{
	pthread_mutex_lock(&a->lock);
	reap(a, true);
	pthread_mutex_unlock(&a->lock);
}

void al_sb_netns_ahead_settle(al_sb_netns_ahead *a)
{
	pthread_mutex_lock(&a->lock);
	reap(a, true);
	start(a);
	reap(a, true);
	/* A new one at the lowest free number from FD_BASE up: a supervisor
	 * compares its descriptor numbers between runs, the helper may have
	 * opened it while a run's were open, and a number among the low ones
	 * would move the next warm member's.  One held since the last settle
	 * stays where it is. */
	if (a->fd >= 0 && a->fresh) {
		a->fresh = false;
		int moved = fcntl(a->fd, F_DUPFD_CLOEXEC, FD_BASE);
		if (moved >= 0) {
			close(a->fd);
			a->fd = moved;
		}
	}
	pthread_mutex_unlock(&a->lock);
}

void al_sb_netns_ahead_clear(al_sb_netns_ahead *a)
{
	pthread_mutex_lock(&a->lock);
	reap(a, true);
	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
	a->enabled = false;
	pthread_mutex_unlock(&a->lock);
	pthread_mutex_destroy(&a->lock);
}
