build-fp/obj-netmod/src/server/listen.o: src/server/listen.c \
 src/server/listen.h include/airlock/error.h
src/server/listen.h:
include/airlock/error.h:
