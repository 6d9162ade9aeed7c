build-fp/obj-netmod/src/server/fleet.o: src/server/fleet.c \
 src/server/fleet.h include/airlock/error.h src/store/store.h \
 include/airlock/json.h include/airlock/contract.h src/core/log.h \
 src/core/util.h src/server/fleet_internal.h src/cgroup/cgroup.h \
 src/server/service.h include/airlock/host.h include/airlock/provider.h \
 include/airlock/server.h src/host/admission.h src/server/auth.h \
 src/server/idle_pool.h src/host/config.h src/server/durable.h \
 src/supervisor/control.h src/supervisor/outlog.h \
 src/supervisor/run_records.h src/supervisor/identity.h \
 src/server/metrics.h src/server/run_filter.h src/supervisor/inbox.h \
 src/supervisor/record_file.h
src/server/fleet.h:
include/airlock/error.h:
src/store/store.h:
include/airlock/json.h:
include/airlock/contract.h:
src/core/log.h:
src/core/util.h:
src/server/fleet_internal.h:
src/cgroup/cgroup.h:
src/server/service.h:
include/airlock/host.h:
include/airlock/provider.h:
include/airlock/server.h:
src/host/admission.h:
src/server/auth.h:
src/server/idle_pool.h:
src/host/config.h:
src/server/durable.h:
src/supervisor/control.h:
src/supervisor/outlog.h:
src/supervisor/run_records.h:
src/supervisor/identity.h:
src/server/metrics.h:
src/server/run_filter.h:
src/supervisor/inbox.h:
src/supervisor/record_file.h:
