build-fp/obj/src/host/config_env.o: src/host/config_env.c \
 src/host/config_env.h src/host/config.h include/airlock/contract.h \
 include/airlock/host.h include/airlock/error.h \
 include/airlock/provider.h src/host/env_policy.h src/json/syntax.h
src/host/config_env.h:
src/host/config.h:
include/airlock/contract.h:
include/airlock/host.h:
include/airlock/error.h:
include/airlock/provider.h:
src/host/env_policy.h:
src/json/syntax.h:
