build-fp/obj-netmod/src/server/sse.o: src/server/sse.c \
 include/airlock/json.h include/airlock/contract.h \
 include/airlock/error.h src/core/util.h src/json/base64.h \
 src/server/http.h src/server/conns.h src/server/service.h \
 include/airlock/host.h include/airlock/provider.h \
 include/airlock/server.h src/host/admission.h src/server/auth.h \
 src/server/idle_pool.h src/host/config.h src/server/durable.h \
 src/supervisor/control.h src/supervisor/outlog.h \
 src/supervisor/run_records.h src/supervisor/identity.h \
 src/server/metrics.h src/server/run_filter.h
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/core/util.h:
src/json/base64.h:
src/server/http.h:
src/server/conns.h:
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
