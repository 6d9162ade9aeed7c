build-fp/obj/src/core/hash.o: src/core/hash.c src/core/hash.h \
 include/airlock/json.h include/airlock/contract.h \
 include/airlock/error.h
src/core/hash.h:
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
