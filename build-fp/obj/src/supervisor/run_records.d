build-fp/obj/src/supervisor/run_records.o: src/supervisor/run_records.c \
 src/supervisor/run_records.h src/supervisor/identity.h \
 include/airlock/json.h include/airlock/contract.h \
 include/airlock/error.h src/child/rundir.h include/airlock/provider.h \
 src/core/dir_spread.h src/core/util.h src/supervisor/record_file.h \
 src/cgroup/cgroup.h
src/supervisor/run_records.h:
src/supervisor/identity.h:
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/child/rundir.h:
include/airlock/provider.h:
src/core/dir_spread.h:
src/core/util.h:
src/supervisor/record_file.h:
src/cgroup/cgroup.h:
