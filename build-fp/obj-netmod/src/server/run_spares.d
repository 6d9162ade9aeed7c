build-fp/obj-netmod/src/server/run_spares.o: src/server/run_spares.c \
 src/server/run_spares.h src/child/rundir.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/provider.h src/core/dir_spread.h \
 src/core/util.h src/supervisor/inbox.h src/supervisor/record_file.h \
 src/supervisor/run_records.h src/supervisor/identity.h
src/server/run_spares.h:
src/child/rundir.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/provider.h:
src/core/dir_spread.h:
src/core/util.h:
src/supervisor/inbox.h:
src/supervisor/record_file.h:
src/supervisor/run_records.h:
src/supervisor/identity.h:
