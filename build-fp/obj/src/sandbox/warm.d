build-fp/obj/src/sandbox/warm.o: src/sandbox/warm.c src/sandbox/warm.h \
 include/airlock/contract.h include/airlock/error.h \
 include/airlock/provider.h src/child/rundir.h src/child/supervise.h \
 src/cgroup/cgroup.h src/sandbox/context.h \
 src/sandbox/observation_cache.h src/sandbox/seccomp_policy.h \
 src/sandbox/run.h src/child/shepherd.h src/child/supervise.h \
 src/sandbox/userns.h src/core/util.h src/lang/languages.h \
 src/child/env.h src/sandbox/launch.h src/sandbox/landlock.h \
 src/sandbox/mounts.h src/sandbox/runbase.h src/sandbox/warm_inbox.h \
 src/sandbox/warm_loaders.h
src/sandbox/warm.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/provider.h:
src/child/rundir.h:
src/child/supervise.h:
src/cgroup/cgroup.h:
src/sandbox/context.h:
src/sandbox/observation_cache.h:
src/sandbox/seccomp_policy.h:
src/sandbox/run.h:
src/child/shepherd.h:
src/child/supervise.h:
src/sandbox/userns.h:
src/core/util.h:
src/lang/languages.h:
src/child/env.h:
src/sandbox/launch.h:
src/sandbox/landlock.h:
src/sandbox/mounts.h:
src/sandbox/runbase.h:
src/sandbox/warm_inbox.h:
src/sandbox/warm_loaders.h:
