/* Fault injection for the durability tests (see fault.h). */
#include "supervisor/fault.h"
#include "core/log.h"

#ifdef AL_TEST_BUILD
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void al_fault_point(const char *name)
{
	const char *want = getenv("AIRLOCK_FAULT");
	if (want == NULL || strcmp(want, name) != 0)
		return;
	al_logf(AL_LOG_INFO, NULL, "fault point %s: SIGKILL", name);
	/* The tests look for the line: out before the kill. */
	(void)al_log_flush(5000);
	fflush(stderr);
	kill(getpid(), SIGKILL);
	pause();
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int al_fault_unused;
#endif
