/* Internal: the mechanism trial -- a throwaway child tries everything the
 * sandbox relies on and reports what worked. */
#ifndef AL_SANDBOX_MECHANISMS_H
#define AL_SANDBOX_MECHANISMS_H

#include <stdbool.h>

#include "sandbox/observation_cache.h"
#include "sandbox/seccomp_policy.h"

/* Forks a child that tries the namespaces (as root: then dropping to an
 * unprivileged uid and creating a user namespace; unprivileged: all in one
 * unshare with a user namespace), no_new_privs, emptying the bounding set,
 * a Landlock ruleset (when abi > 0) and loading filter (then checks that
 * unshare is refused). */
void al_sb_try_mechanisms(bool privileged, int cap_last, int landlock_abi,
			  const al_sb_filter *filter, al_sb_mechanisms *m);

#endif
