build-fp/obj/src/host/audit.o: src/host/audit.c src/host/audit.h \
 src/host/db.h include/airlock/error.h src/core/hash.h \
 include/airlock/contract.h include/airlock/host.h \
 include/airlock/provider.h include/airlock/json.h
src/host/audit.h:
src/host/db.h:
include/airlock/error.h:
src/core/hash.h:
include/airlock/contract.h:
include/airlock/host.h:
include/airlock/provider.h:
include/airlock/json.h:
