build-fp/obj/src/sandbox/filter_cache.o: src/sandbox/filter_cache.c \
 src/sandbox/filter_cache.h src/sandbox/seccomp_policy.h \
 include/airlock/error.h include/airlock/json.h \
 include/airlock/contract.h src/core/code_file.h src/core/util.h \
 src/sandbox/observation_cache.h src/cgroup/cgroup.h
src/sandbox/filter_cache.h:
src/sandbox/seccomp_policy.h:
include/airlock/error.h:
include/airlock/json.h:
include/airlock/contract.h:
src/core/code_file.h:
src/core/util.h:
src/sandbox/observation_cache.h:
src/cgroup/cgroup.h:
