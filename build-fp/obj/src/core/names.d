build-fp/obj/src/core/names.o: src/core/names.c include/airlock/airlock.h \
 include/airlock/contract.h include/airlock/error.h \
 include/airlock/host.h include/airlock/provider.h include/airlock/json.h
include/airlock/airlock.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/host.h:
include/airlock/provider.h:
include/airlock/json.h:
