build-fp/obj-netmod/src/server/durable.o: src/server/durable.c \
 src/server/durable.h include/airlock/contract.h include/airlock/error.h \
 src/supervisor/control.h src/supervisor/outlog.h \
 src/supervisor/run_records.h src/supervisor/identity.h \
 include/airlock/json.h src/core/log.h src/core/util.h \
 src/child/artifacts.h include/airlock/provider.h src/child/rundir.h \
 src/child/shepherd.h src/child/supervise.h src/supervisor/record_file.h \
 src/supervisor/fault.h src/supervisor/inbox.h src/cgroup/cgroup.h \
 src/supervisor/toolbelt.h src/server/run_spares.h
src/server/durable.h:
include/airlock/contract.h:
include/airlock/error.h:
src/supervisor/control.h:
src/supervisor/outlog.h:
src/supervisor/run_records.h:
src/supervisor/identity.h:
include/airlock/json.h:
src/core/log.h:
src/core/util.h:
src/child/artifacts.h:
include/airlock/provider.h:
src/child/rundir.h:
src/child/shepherd.h:
src/child/supervise.h:
src/supervisor/record_file.h:
src/supervisor/fault.h:
src/supervisor/inbox.h:
src/cgroup/cgroup.h:
src/supervisor/toolbelt.h:
src/server/run_spares.h:
