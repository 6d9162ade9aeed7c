build-fp/obj/src/host/run_env.o: src/host/run_env.c src/host/run_env.h \
 src/host/config.h include/airlock/contract.h include/airlock/host.h \
 include/airlock/error.h include/airlock/provider.h \
 include/airlock/json.h src/core/util.h src/host/config_env.h \
 src/host/secrets.h
src/host/run_env.h:
src/host/config.h:
include/airlock/contract.h:
include/airlock/host.h:
include/airlock/error.h:
include/airlock/provider.h:
include/airlock/json.h:
src/core/util.h:
src/host/config_env.h:
src/host/secrets.h:
