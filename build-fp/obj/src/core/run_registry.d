build-fp/obj/src/core/run_registry.o: src/core/run_registry.c \
 src/core/run_registry.h include/airlock/error.h \
 include/airlock/provider.h include/airlock/contract.h
src/core/run_registry.h:
include/airlock/error.h:
include/airlock/provider.h:
include/airlock/contract.h:
