build-fp/obj-netmod/src/server/idle_pool.o: src/server/idle_pool.c \
 src/server/idle_pool.h src/host/config.h include/airlock/contract.h \
 include/airlock/host.h include/airlock/error.h \
 include/airlock/provider.h src/server/durable.h src/supervisor/control.h \
 src/supervisor/outlog.h src/supervisor/run_records.h \
 src/supervisor/identity.h src/core/util.h src/sandbox/sandbox.h \
 src/supervisor/reuse.h
src/server/idle_pool.h:
src/host/config.h:
include/airlock/contract.h:
include/airlock/host.h:
include/airlock/error.h:
include/airlock/provider.h:
src/server/durable.h:
src/supervisor/control.h:
src/supervisor/outlog.h:
src/supervisor/run_records.h:
src/supervisor/identity.h:
src/core/util.h:
src/sandbox/sandbox.h:
src/supervisor/reuse.h:
