build-fp/obj-netmod/src/server/http.o: src/server/http.c \
 include/airlock/json.h include/airlock/contract.h \
 include/airlock/error.h src/core/log.h src/core/util.h \
 src/child/artifacts.h include/airlock/provider.h src/child/rundir.h \
 src/server/audit_view.h src/server/compat.h src/server/service.h \
 include/airlock/host.h include/airlock/server.h src/host/admission.h \
 src/server/auth.h src/server/idle_pool.h src/host/config.h \
 src/server/durable.h src/supervisor/control.h src/supervisor/outlog.h \
 src/supervisor/run_records.h src/supervisor/identity.h \
 src/server/metrics.h src/server/run_filter.h src/server/conns.h \
 src/server/http.h src/server/rate.h src/server/fleet.h src/store/store.h \
 src/server/ui.h
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/core/log.h:
src/core/util.h:
src/child/artifacts.h:
include/airlock/provider.h:
src/child/rundir.h:
src/server/audit_view.h:
src/server/compat.h:
src/server/service.h:
include/airlock/host.h:
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
src/server/conns.h:
src/server/http.h:
src/server/rate.h:
src/server/fleet.h:
src/store/store.h:
src/server/ui.h:
