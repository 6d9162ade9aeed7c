build-fp/obj/src/sandbox/doctor.o: src/sandbox/doctor.c \
 src/sandbox/context.h include/airlock/contract.h include/airlock/error.h \
 src/cgroup/cgroup.h src/sandbox/observation_cache.h \
 src/sandbox/seccomp_policy.h src/sandbox/probe.h src/sandbox/sandbox.h \
 include/airlock/provider.h src/sandbox/userns.h
src/sandbox/context.h:
include/airlock/contract.h:
include/airlock/error.h:
src/cgroup/cgroup.h:
src/sandbox/observation_cache.h:
src/sandbox/seccomp_policy.h:
src/sandbox/probe.h:
src/sandbox/sandbox.h:
include/airlock/provider.h:
src/sandbox/userns.h:
