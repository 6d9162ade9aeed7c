/* Internal: a durable run's cgroup lives in the cgroup module, shared
 * with the sandbox (src/cgroup/cgroup.h, al_runcg_*). */
#ifndef AL_SUPERVISOR_RUNCG_H
#define AL_SUPERVISOR_RUNCG_H

#include "cgroup/cgroup.h"

#endif
