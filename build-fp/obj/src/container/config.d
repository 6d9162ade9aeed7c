build-fp/obj/src/container/config.o: src/container/config.c \
 src/container/container.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/provider.h src/child/rundir.h \
 src/child/supervise.h src/core/util.h
src/container/container.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/provider.h:
src/child/rundir.h:
src/child/supervise.h:
src/core/util.h:
