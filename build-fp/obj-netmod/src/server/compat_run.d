build-fp/obj-netmod/src/server/compat_run.o: src/server/compat_run.c \
 include/airlock/host.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/provider.h src/host/config.h \
 include/airlock/json.h src/json/base64.h src/server/compat.h \
 src/server/service.h include/airlock/server.h src/host/admission.h \
 src/server/auth.h src/server/idle_pool.h src/server/durable.h \
 src/supervisor/control.h src/supervisor/outlog.h \
 src/supervisor/run_records.h src/supervisor/identity.h \
 src/server/metrics.h src/server/run_filter.h
include/airlock/host.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/provider.h:
src/host/config.h:
include/airlock/json.h:
src/json/base64.h:
src/server/compat.h:
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
