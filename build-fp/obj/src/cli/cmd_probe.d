build-fp/obj/src/cli/cmd_probe.o: src/cli/cmd_probe.c \
 include/airlock/airlock.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/host.h \
 include/airlock/provider.h include/airlock/json.h src/cli/cli.h
include/airlock/airlock.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/host.h:
include/airlock/provider.h:
include/airlock/json.h:
src/cli/cli.h:
