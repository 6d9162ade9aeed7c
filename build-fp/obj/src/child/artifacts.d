build-fp/obj/src/child/artifacts.o: src/child/artifacts.c \
 src/child/artifacts.h include/airlock/error.h include/airlock/provider.h \
 include/airlock/contract.h src/child/rundir.h src/bundle/beneath.h \
 src/core/dir_spread.h src/core/util.h
src/child/artifacts.h:
include/airlock/error.h:
include/airlock/provider.h:
include/airlock/contract.h:
src/child/rundir.h:
src/bundle/beneath.h:
src/core/dir_spread.h:
src/core/util.h:
