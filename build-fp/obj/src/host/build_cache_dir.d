build-fp/obj/src/host/build_cache_dir.o: src/host/build_cache_dir.c \
 src/host/build_cache_dir.h include/airlock/json.h \
 include/airlock/contract.h include/airlock/error.h src/core/util.h
src/host/build_cache_dir.h:
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/core/util.h:
