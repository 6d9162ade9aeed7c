build-fp/obj-netmod/src/server/server.o: src/server/server.c \
 include/airlock/server.h include/airlock/error.h src/core/log.h \
 src/host/config.h include/airlock/contract.h include/airlock/host.h \
 include/airlock/provider.h src/host/state_dir.h src/child/artifacts.h \
 src/child/rundir.h src/server/compat.h src/server/service.h \
 src/host/admission.h src/server/auth.h src/server/idle_pool.h \
 src/server/durable.h src/supervisor/control.h src/supervisor/outlog.h \
 src/supervisor/run_records.h src/supervisor/identity.h \
 src/server/metrics.h src/server/run_filter.h src/server/http.h \
 src/server/conns.h src/server/fleet.h src/store/store.h \
 src/server/listen.h src/supervisor/retention.h src/core/util.h
include/airlock/server.h:
include/airlock/error.h:
src/core/log.h:
src/host/config.h:
include/airlock/contract.h:
include/airlock/host.h:
include/airlock/provider.h:
src/host/state_dir.h:
src/child/artifacts.h:
src/child/rundir.h:
src/server/compat.h:
src/server/service.h:
src/host/admission.h:
src/server/auth.h:
src/server/idle_pool.h:
src/server/durable.h:
src/supervisor/control.h:
src/supervisor/outlog.h:
src/supervisor/run_records.h:
src/supervisor/identity.h:
src/server/metrics.h:
src/server/run_filter.h:
src/server/http.h:
src/server/conns.h:
src/server/fleet.h:
src/store/store.h:
src/server/listen.h:
src/supervisor/retention.h:
src/core/util.h:
