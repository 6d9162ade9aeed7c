build-fp/obj/src/host/idempotency.o: src/host/idempotency.c \
 src/host/idempotency.h src/host/db.h include/airlock/error.h \
 include/airlock/contract.h
src/host/idempotency.h:
src/host/db.h:
include/airlock/error.h:
include/airlock/contract.h:
