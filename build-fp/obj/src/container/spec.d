build-fp/obj/src/container/spec.o: src/container/spec.c \
 src/container/container.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/provider.h src/child/rundir.h \
 src/child/supervise.h src/core/util.h src/child/shepherd.h \
 src/child/supervise.h src/cgroup/cgroup.h src/sandbox/mounts.h \
 src/sandbox/run.h src/sandbox/context.h src/sandbox/observation_cache.h \
 src/sandbox/seccomp_policy.h
src/container/container.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/provider.h:
src/child/rundir.h:
src/child/supervise.h:
src/core/util.h:
src/child/shepherd.h:
src/child/supervise.h:
src/cgroup/cgroup.h:
src/sandbox/mounts.h:
src/sandbox/run.h:
src/sandbox/context.h:
src/sandbox/observation_cache.h:
src/sandbox/seccomp_policy.h:
