build-fp/obj/src/core/util.o: src/core/util.c src/core/util.h \
 include/airlock/contract.h
src/core/util.h:
include/airlock/contract.h:
