build-fp/obj/src/child/supervise.o: src/child/supervise.c src/core/util.h \
 include/airlock/contract.h src/child/supervise.h include/airlock/error.h \
 include/airlock/provider.h
src/core/util.h:
include/airlock/contract.h:
src/child/supervise.h:
include/airlock/error.h:
include/airlock/provider.h:
