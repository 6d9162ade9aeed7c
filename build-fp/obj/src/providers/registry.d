build-fp/obj/src/providers/registry.o: src/providers/registry.c \
 src/core/util.h include/airlock/contract.h src/providers/builtin.h \
 include/airlock/provider.h include/airlock/error.h \
 src/providers/cache_dir.h src/providers/remote.h src/sandbox/sandbox.h
src/core/util.h:
include/airlock/contract.h:
src/providers/builtin.h:
include/airlock/provider.h:
include/airlock/error.h:
src/providers/cache_dir.h:
src/providers/remote.h:
src/sandbox/sandbox.h:
