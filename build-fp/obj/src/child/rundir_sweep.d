build-fp/obj/src/child/rundir_sweep.o: src/child/rundir_sweep.c \
 src/core/util.h include/airlock/contract.h src/child/rundir.h \
 include/airlock/error.h include/airlock/provider.h \
 src/child/rundir_sweep.h
src/core/util.h:
include/airlock/contract.h:
src/child/rundir.h:
include/airlock/error.h:
include/airlock/provider.h:
src/child/rundir_sweep.h:
