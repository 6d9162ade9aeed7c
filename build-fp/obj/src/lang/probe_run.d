build-fp/obj/src/lang/probe_run.o: src/lang/probe_run.c \
 src/lang/probe_run.h src/core/util.h include/airlock/contract.h
src/lang/probe_run.h:
src/core/util.h:
include/airlock/contract.h:
