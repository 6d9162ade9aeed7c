build-fp/obj/src/supervisor/outlog.o: src/supervisor/outlog.c \
 src/supervisor/outlog.h include/airlock/contract.h
src/supervisor/outlog.h:
include/airlock/contract.h:
