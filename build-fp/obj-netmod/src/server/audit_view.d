build-fp/obj-netmod/src/server/audit_view.o: src/server/audit_view.c \
 include/airlock/host.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/provider.h src/host/db.h \
 src/server/audit_view.h
include/airlock/host.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/provider.h:
src/host/db.h:
src/server/audit_view.h:
