build-fp/obj-netmod/src/server/carry.o: src/server/carry.c \
 src/server/carry.h src/server/durable.h include/airlock/contract.h \
 include/airlock/error.h src/supervisor/control.h src/supervisor/outlog.h \
 src/supervisor/run_records.h src/supervisor/identity.h \
 src/supervisor/record_file.h src/supervisor/inbox.h
src/server/carry.h:
src/server/durable.h:
include/airlock/contract.h:
include/airlock/error.h:
src/supervisor/control.h:
src/supervisor/outlog.h:
src/supervisor/run_records.h:
src/supervisor/identity.h:
src/supervisor/record_file.h:
src/supervisor/inbox.h:
