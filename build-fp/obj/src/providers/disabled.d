build-fp/obj/src/providers/disabled.o: src/providers/disabled.c \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h src/providers/builtin.h \
 src/providers/cache_dir.h
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
src/providers/builtin.h:
src/providers/cache_dir.h:
