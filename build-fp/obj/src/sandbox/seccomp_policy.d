build-fp/obj/src/sandbox/seccomp_policy.o: src/sandbox/seccomp_policy.c \
 src/sandbox/seccomp_policy.h include/airlock/error.h \
 src/providers/cache_dir.h src/sandbox/filter_cache.h
src/sandbox/seccomp_policy.h:
include/airlock/error.h:
src/providers/cache_dir.h:
src/sandbox/filter_cache.h:
