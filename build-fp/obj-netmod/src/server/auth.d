build-fp/obj-netmod/src/server/auth.o: src/server/auth.c \
 include/airlock/json.h include/airlock/contract.h \
 include/airlock/error.h src/core/util.h src/host/config.h \
 include/airlock/host.h include/airlock/provider.h src/server/auth.h
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/core/util.h:
src/host/config.h:
include/airlock/host.h:
include/airlock/provider.h:
src/server/auth.h:
