build-fp/obj/src/sandbox/pool.o: src/sandbox/pool.c src/sandbox/pool.h \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h src/sandbox/context.h src/cgroup/cgroup.h \
 src/sandbox/observation_cache.h src/sandbox/seccomp_policy.h \
 src/sandbox/sandbox.h src/sandbox/warm.h src/child/rundir.h \
 src/child/supervise.h src/sandbox/run.h src/child/shepherd.h \
 src/child/supervise.h src/sandbox/userns.h src/core/util.h
src/sandbox/pool.h:
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
src/sandbox/context.h:
src/cgroup/cgroup.h:
src/sandbox/observation_cache.h:
src/sandbox/seccomp_policy.h:
src/sandbox/sandbox.h:
src/sandbox/warm.h:
src/child/rundir.h:
src/child/supervise.h:
src/sandbox/run.h:
src/child/shepherd.h:
src/child/supervise.h:
src/sandbox/userns.h:
src/core/util.h:
