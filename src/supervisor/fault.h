/* Internal: fault injection for the durability tests.
 *
 * Only in test builds (make AL_TEST_BUILD=1): when AIRLOCK_FAULT names a
 * point, the process SIGKILLs itself on reaching it.  The points
 * (docs/durability.md, "Fault points"): the daemon's before_persist,
 * after_persist, after_launch, during_run, after_result, before_ack, and
 * a supervisor's record_unnamed.  In other builds this is empty. */
#ifndef AL_SUPERVISOR_FAULT_H
#define AL_SUPERVISOR_FAULT_H

#ifdef AL_TEST_BUILD
void al_fault_point(const char *name);
#else
static inline void al_fault_point(const char *name)
{
	(void)name;
}
#endif

#endif
