/* Internal: how a daemon tells a supervisor to interrupt or stop its run.
 *
 * The daemon writes RUN/control.json, {"epoch": E, "action": A}, then
 * rings the supervisor (SIGUSR1 through a verified pidfd).  The supervisor
 * obeys only when E is at least the epoch in RUN/lease, the epoch of the
 * daemon that owns the run now: a superseded daemon can neither interrupt
 * nor stop a run a newer one adopted. */
#ifndef AL_SUPERVISOR_CONTROL_H
#define AL_SUPERVISOR_CONTROL_H

#include <stdint.h>

typedef enum al_control_action {
	AL_CONTROL_INTERRUPT = 1, /* TERM to the tree, KILL after the grace */
	AL_CONTROL_STOP		  /* the same; the daemon waits for the end */
} al_control_action;

int al_control_write(int dirfd, uint64_t epoch, al_control_action action);
/* -ENOENT when none, -EBADMSG when malformed. */
int al_control_read(int dirfd, uint64_t *epoch, al_control_action *action);

#endif
