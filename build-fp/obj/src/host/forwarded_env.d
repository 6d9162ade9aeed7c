build-fp/obj/src/host/forwarded_env.o: src/host/forwarded_env.c \
 include/airlock/json.h include/airlock/contract.h \
 include/airlock/error.h src/core/util.h src/host/forwarded_env.h \
 src/host/secrets.h src/host/config.h include/airlock/host.h \
 include/airlock/provider.h src/json/base64.h src/json/syntax.h
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/core/util.h:
src/host/forwarded_env.h:
src/host/secrets.h:
src/host/config.h:
include/airlock/host.h:
include/airlock/provider.h:
src/json/base64.h:
src/json/syntax.h:
