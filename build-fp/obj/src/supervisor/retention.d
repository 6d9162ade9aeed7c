build-fp/obj/src/supervisor/retention.o: src/supervisor/retention.c \
 src/supervisor/retention.h include/airlock/error.h src/child/artifacts.h \
 include/airlock/provider.h include/airlock/contract.h src/child/rundir.h \
 src/core/util.h src/supervisor/run_records.h src/supervisor/identity.h
src/supervisor/retention.h:
include/airlock/error.h:
src/child/artifacts.h:
include/airlock/provider.h:
include/airlock/contract.h:
src/child/rundir.h:
src/core/util.h:
src/supervisor/run_records.h:
src/supervisor/identity.h:
