build-fp/obj/src/host/secrets.o: src/host/secrets.c src/host/secrets.h \
 src/host/config.h include/airlock/contract.h include/airlock/host.h \
 include/airlock/error.h include/airlock/provider.h
src/host/secrets.h:
src/host/config.h:
include/airlock/contract.h:
include/airlock/host.h:
include/airlock/error.h:
include/airlock/provider.h:
