build-fp/obj/src/sandbox/run.o: src/sandbox/run.c src/core/log.h \
 src/sandbox/run.h include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h src/child/rundir.h src/child/shepherd.h \
 src/child/supervise.h src/child/supervise.h src/cgroup/cgroup.h \
 src/sandbox/context.h src/sandbox/observation_cache.h \
 src/sandbox/seccomp_policy.h src/sandbox/netns_ahead.h \
 src/bundle/bundle.h src/sandbox/launch.h src/sandbox/landlock.h \
 src/sandbox/mounts.h src/sandbox/tool_mount.h src/sandbox/warm_inbox.h
src/core/log.h:
src/sandbox/run.h:
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
src/child/rundir.h:
src/child/shepherd.h:
src/child/supervise.h:
src/child/supervise.h:
src/cgroup/cgroup.h:
src/sandbox/context.h:
src/sandbox/observation_cache.h:
src/sandbox/seccomp_policy.h:
src/sandbox/netns_ahead.h:
src/bundle/bundle.h:
src/sandbox/launch.h:
src/sandbox/landlock.h:
src/sandbox/mounts.h:
src/sandbox/tool_mount.h:
src/sandbox/warm_inbox.h:
