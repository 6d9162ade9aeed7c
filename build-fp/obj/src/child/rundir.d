build-fp/obj/src/child/rundir.o: src/child/rundir.c src/bundle/bundle.h \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h src/core/util.h src/child/rundir.h \
 src/child/rundir_sweep.h
src/bundle/bundle.h:
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
src/core/util.h:
src/child/rundir.h:
src/child/rundir_sweep.h:
