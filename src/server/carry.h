/* Internal: carry-over (docs/durability.md, "Carry-over").  A finished
 * durable run's inbox events it never acknowledged reach the inbox of
 * one later run of the same tenant that names it in "continues", in
 * their order, once: the first continuation marks the run (RUN/carried)
 * and a later one is refused. */
#ifndef AL_SERVER_CARRY_H
#define AL_SERVER_CARRY_H

#include "server/durable.h"

#define AL_RF_CARRIED "carried"

/* Whether `from` may be continued by `tenant`: 0; -ENOENT when there is
 * no such run or it is another tenant's (alike, so nothing about other
 * tenants' runs shows); -EBUSY when it has not finished; -EALREADY when
 * it was continued before. */
int al_carry_check(al_durable *d, const char *from, const char *tenant);
/* Marks `from` continued (under its lock) and delivers its pending
 * events into `to`'s inbox in their order.  The number delivered, or
 * the errors of al_carry_check, or another negative errno.  `to` is a
 * run just created, not yet launched, whose lock its creator holds. */
int al_carry_over(al_durable *d, const char *from, const char *tenant,
		  al_drun *to);

#endif
