build-fp/obj/src/sandbox/build.o: src/sandbox/build.c src/sandbox/build.h \
 src/lang/languages.h include/airlock/error.h src/sandbox/run.h \
 include/airlock/provider.h include/airlock/contract.h src/child/rundir.h \
 src/child/shepherd.h src/child/supervise.h src/child/supervise.h \
 src/cgroup/cgroup.h src/sandbox/context.h \
 src/sandbox/observation_cache.h src/sandbox/seccomp_policy.h \
 src/core/build_contract.h src/core/util.h src/child/build_cache.h
src/sandbox/build.h:
src/lang/languages.h:
include/airlock/error.h:
src/sandbox/run.h:
include/airlock/provider.h:
include/airlock/contract.h:
src/child/rundir.h:
src/child/shepherd.h:
src/child/supervise.h:
src/child/supervise.h:
src/cgroup/cgroup.h:
src/sandbox/context.h:
src/sandbox/observation_cache.h:
src/sandbox/seccomp_policy.h:
src/core/build_contract.h:
src/core/util.h:
src/child/build_cache.h:
