build-fp/obj/src/supervisor/inbox.o: src/supervisor/inbox.c \
 src/supervisor/inbox.h include/airlock/json.h include/airlock/contract.h \
 include/airlock/error.h src/supervisor/record_file.h \
 src/supervisor/run_records.h src/supervisor/identity.h
src/supervisor/inbox.h:
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/supervisor/record_file.h:
src/supervisor/run_records.h:
src/supervisor/identity.h:
