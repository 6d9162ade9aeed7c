build-fp/obj/src/sandbox/launch.o: src/sandbox/launch.c \
 src/sandbox/launch.h include/airlock/contract.h include/airlock/error.h \
 src/child/shepherd.h src/child/supervise.h include/airlock/provider.h \
 src/child/supervise.h src/cgroup/cgroup.h src/sandbox/landlock.h \
 src/sandbox/mounts.h src/sandbox/seccomp_policy.h src/sandbox/netns.h \
 src/sandbox/userns.h
src/sandbox/launch.h:
include/airlock/contract.h:
include/airlock/error.h:
src/child/shepherd.h:
src/child/supervise.h:
include/airlock/provider.h:
src/child/supervise.h:
src/cgroup/cgroup.h:
src/sandbox/landlock.h:
src/sandbox/mounts.h:
src/sandbox/seccomp_policy.h:
src/sandbox/netns.h:
src/sandbox/userns.h:
