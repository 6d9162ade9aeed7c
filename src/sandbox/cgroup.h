/* Internal: the sandbox's cgroups live in the cgroup module, shared with
 * the durable run's supervisor (src/cgroup/cgroup.h). */
#ifndef AL_SANDBOX_CGROUP_H
#define AL_SANDBOX_CGROUP_H

#include "cgroup/cgroup.h"

#endif
