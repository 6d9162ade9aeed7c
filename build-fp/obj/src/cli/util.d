build-fp/obj/src/cli/util.o: src/cli/util.c include/airlock/airlock.h \
 include/airlock/contract.h include/airlock/error.h \
 include/airlock/host.h include/airlock/provider.h include/airlock/json.h \
 src/cli/cli.h src/host/config.h
include/airlock/airlock.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/host.h:
include/airlock/provider.h:
include/airlock/json.h:
src/cli/cli.h:
src/host/config.h:
