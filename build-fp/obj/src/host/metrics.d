build-fp/obj/src/host/metrics.o: src/host/metrics.c src/host/metrics.h \
 include/airlock/contract.h
src/host/metrics.h:
include/airlock/contract.h:
