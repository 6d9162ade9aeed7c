build-fp/obj/src/cli/cmd_serve.o: src/cli/cmd_serve.c \
 include/airlock/server.h include/airlock/error.h src/cli/cli.h \
 src/core/log.h src/sandbox/sandbox.h include/airlock/provider.h \
 include/airlock/contract.h
include/airlock/server.h:
include/airlock/error.h:
src/cli/cli.h:
src/core/log.h:
src/sandbox/sandbox.h:
include/airlock/provider.h:
include/airlock/contract.h:
