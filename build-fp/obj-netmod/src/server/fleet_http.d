build-fp/obj-netmod/src/server/fleet_http.o: src/server/fleet_http.c \
 include/airlock/contract.h include/airlock/json.h \
 include/airlock/error.h src/core/util.h src/host/config.h \
 include/airlock/host.h include/airlock/provider.h \
 src/host/forwarded_env.h src/host/secrets.h src/server/fleet_internal.h \
 src/server/fleet.h src/store/store.h src/server/http.h \
 src/server/conns.h src/server/service.h include/airlock/server.h \
 src/host/admission.h src/server/auth.h src/server/idle_pool.h \
 src/server/durable.h src/supervisor/control.h src/supervisor/outlog.h \
 src/supervisor/run_records.h src/supervisor/identity.h \
 src/server/metrics.h src/server/run_filter.h
include/airlock/contract.h:
include/airlock/json.h:
include/airlock/error.h:
src/core/util.h:
src/host/config.h:
include/airlock/host.h:
include/airlock/provider.h:
src/host/forwarded_env.h:
src/host/secrets.h:
src/server/fleet_internal.h:
src/server/fleet.h:
src/store/store.h:
src/server/http.h:
src/server/conns.h:
src/server/service.h:
include/airlock/server.h:
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
