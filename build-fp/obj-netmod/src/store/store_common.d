build-fp/obj-netmod/src/store/store_common.o: src/store/store_common.c \
 src/store/store_common.h include/airlock/error.h src/store/store.h \
 include/airlock/json.h include/airlock/contract.h
src/store/store_common.h:
include/airlock/error.h:
src/store/store.h:
include/airlock/json.h:
include/airlock/contract.h:
