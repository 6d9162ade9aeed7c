build-fp/obj-netmod/src/server/conns.o: src/server/conns.c \
 src/server/conns.h src/core/util.h include/airlock/contract.h
src/server/conns.h:
src/core/util.h:
include/airlock/contract.h:
