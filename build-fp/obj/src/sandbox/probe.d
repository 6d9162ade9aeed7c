build-fp/obj/src/sandbox/probe.o: src/sandbox/probe.c src/sandbox/probe.h \
 include/airlock/contract.h include/airlock/error.h src/sandbox/context.h \
 src/cgroup/cgroup.h src/sandbox/observation_cache.h \
 src/sandbox/seccomp_policy.h include/airlock/provider.h src/core/util.h \
 src/lang/languages.h src/lang/path_memo.h src/child/env.h \
 src/child/rundir.h src/sandbox/mounts.h src/sandbox/run.h \
 src/child/shepherd.h src/child/supervise.h src/child/supervise.h \
 src/sandbox/runbase.h src/sandbox/userns.h
src/sandbox/probe.h:
include/airlock/contract.h:
include/airlock/error.h:
src/sandbox/context.h:
src/cgroup/cgroup.h:
src/sandbox/observation_cache.h:
src/sandbox/seccomp_policy.h:
include/airlock/provider.h:
src/core/util.h:
src/lang/languages.h:
src/lang/path_memo.h:
src/child/env.h:
src/child/rundir.h:
src/sandbox/mounts.h:
src/sandbox/run.h:
src/child/shepherd.h:
src/child/supervise.h:
src/child/supervise.h:
src/sandbox/runbase.h:
src/sandbox/userns.h:
