build-fp/obj/src/container/images.o: src/container/images.c \
 src/core/hash.h src/container/container.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/provider.h src/child/rundir.h \
 src/child/supervise.h src/core/util.h
src/core/hash.h:
src/container/container.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/provider.h:
src/child/rundir.h:
src/child/supervise.h:
src/core/util.h:
