build-fp/obj/src/cli/cmd_supervise.o: src/cli/cmd_supervise.c \
 src/cli/cli.h src/core/log.h src/sandbox/sandbox.h \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h src/supervisor/supervisor.h
src/cli/cli.h:
src/core/log.h:
src/sandbox/sandbox.h:
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
src/supervisor/supervisor.h:
