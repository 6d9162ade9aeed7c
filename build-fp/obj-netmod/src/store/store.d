build-fp/obj-netmod/src/store/store.o: src/store/store.c \
 src/store/store.h include/airlock/error.h
src/store/store.h:
include/airlock/error.h:
