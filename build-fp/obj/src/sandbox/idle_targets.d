build-fp/obj/src/sandbox/idle_targets.o: src/sandbox/idle_targets.c \
 src/sandbox/context.h include/airlock/contract.h include/airlock/error.h \
 src/cgroup/cgroup.h src/sandbox/observation_cache.h \
 src/sandbox/seccomp_policy.h src/sandbox/sandbox.h \
 include/airlock/provider.h
src/sandbox/context.h:
include/airlock/contract.h:
include/airlock/error.h:
src/cgroup/cgroup.h:
src/sandbox/observation_cache.h:
src/sandbox/seccomp_policy.h:
src/sandbox/sandbox.h:
include/airlock/provider.h:
