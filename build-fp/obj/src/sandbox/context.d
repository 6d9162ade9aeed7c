build-fp/obj/src/sandbox/context.o: src/sandbox/context.c \
 src/sandbox/context.h include/airlock/contract.h include/airlock/error.h \
 src/cgroup/cgroup.h src/sandbox/observation_cache.h \
 src/sandbox/seccomp_policy.h src/providers/cache_dir.h src/core/util.h \
 src/lang/languages.h src/sandbox/landlock.h src/sandbox/mechanisms.h
src/sandbox/context.h:
include/airlock/contract.h:
include/airlock/error.h:
src/cgroup/cgroup.h:
src/sandbox/observation_cache.h:
src/sandbox/seccomp_policy.h:
src/providers/cache_dir.h:
src/core/util.h:
src/lang/languages.h:
src/sandbox/landlock.h:
src/sandbox/mechanisms.h:
