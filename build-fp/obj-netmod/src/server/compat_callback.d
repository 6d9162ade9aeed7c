build-fp/obj-netmod/src/server/compat_callback.o: \
 src/server/compat_callback.c src/core/log.h src/host/admission.h \
 include/airlock/host.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/provider.h src/server/compat.h \
 src/server/service.h include/airlock/server.h src/server/auth.h \
 src/server/idle_pool.h src/host/config.h src/server/durable.h \
 src/supervisor/control.h src/supervisor/outlog.h \
 src/supervisor/run_records.h src/supervisor/identity.h \
 src/server/metrics.h src/server/run_filter.h
src/core/log.h:
src/host/admission.h:
include/airlock/host.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/provider.h:
src/server/compat.h:
src/server/service.h:
include/airlock/server.h:
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
