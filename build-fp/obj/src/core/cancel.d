build-fp/obj/src/core/cancel.o: src/core/cancel.c \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
