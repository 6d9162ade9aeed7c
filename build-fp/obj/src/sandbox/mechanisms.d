build-fp/obj/src/sandbox/mechanisms.o: src/sandbox/mechanisms.c \
 src/sandbox/mechanisms.h src/sandbox/observation_cache.h \
 src/cgroup/cgroup.h include/airlock/contract.h include/airlock/error.h \
 src/sandbox/seccomp_policy.h src/sandbox/landlock.h
src/sandbox/mechanisms.h:
src/sandbox/observation_cache.h:
src/cgroup/cgroup.h:
include/airlock/contract.h:
include/airlock/error.h:
src/sandbox/seccomp_policy.h:
src/sandbox/landlock.h:
