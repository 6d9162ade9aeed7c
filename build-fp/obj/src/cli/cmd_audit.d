build-fp/obj/src/cli/cmd_audit.o: src/cli/cmd_audit.c \
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
