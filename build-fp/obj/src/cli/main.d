build-fp/obj/src/cli/main.o: src/cli/main.c include/airlock/airlock.h \
 include/airlock/contract.h include/airlock/error.h \
 include/airlock/host.h include/airlock/provider.h include/airlock/json.h \
 src/cli/cli.h src/core/util.h
include/airlock/airlock.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/host.h:
include/airlock/provider.h:
include/airlock/json.h:
src/cli/cli.h:
src/core/util.h:
