build-fp/obj/src/host/slots.o: src/host/slots.c src/host/slots.h \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h
src/host/slots.h:
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
