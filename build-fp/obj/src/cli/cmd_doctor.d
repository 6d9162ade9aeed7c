build-fp/obj/src/cli/cmd_doctor.o: src/cli/cmd_doctor.c src/cli/cli.h \
 src/sandbox/sandbox.h include/airlock/provider.h \
 include/airlock/contract.h include/airlock/error.h
src/cli/cli.h:
src/sandbox/sandbox.h:
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
