build-fp/obj/src/core/exec_stdin.o: src/core/exec_stdin.c \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
