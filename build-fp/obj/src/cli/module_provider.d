build-fp/obj/src/cli/module_provider.o: src/cli/module_provider.c \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h src/cli/cli.h src/host/config.h \
 include/airlock/host.h
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
src/cli/cli.h:
src/host/config.h:
include/airlock/host.h:
