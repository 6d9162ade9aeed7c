build-fp/obj/src/core/log.o: src/core/log.c src/core/log.h \
 src/core/util.h include/airlock/contract.h
src/core/log.h:
src/core/util.h:
include/airlock/contract.h:
