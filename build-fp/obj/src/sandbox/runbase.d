build-fp/obj/src/sandbox/runbase.o: src/sandbox/runbase.c \
 src/sandbox/runbase.h include/airlock/contract.h src/child/rundir.h \
 include/airlock/error.h include/airlock/provider.h
src/sandbox/runbase.h:
include/airlock/contract.h:
src/child/rundir.h:
include/airlock/error.h:
include/airlock/provider.h:
