build-fp/obj/src/providers/module.o: src/providers/module.c \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
