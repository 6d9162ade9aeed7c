build-fp/obj/src/sandbox/observation_cache.o: \
 src/sandbox/observation_cache.c src/sandbox/observation_cache.h \
 src/cgroup/cgroup.h include/airlock/contract.h include/airlock/error.h \
 include/airlock/json.h src/core/cache_files.h src/core/code_file.h \
 src/core/util.h
src/sandbox/observation_cache.h:
src/cgroup/cgroup.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/json.h:
src/core/cache_files.h:
src/core/code_file.h:
src/core/util.h:
