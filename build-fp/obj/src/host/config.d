build-fp/obj/src/host/config.o: src/host/config.c src/host/config.h \
 include/airlock/contract.h include/airlock/host.h \
 include/airlock/error.h include/airlock/provider.h src/host/config_env.h \
 src/host/env_policy.h src/host/operations.h src/json/toolbelt_json.h \
 src/json/field_codec.h src/json/syntax.h
src/host/config.h:
include/airlock/contract.h:
include/airlock/host.h:
include/airlock/error.h:
include/airlock/provider.h:
src/host/config_env.h:
src/host/env_policy.h:
src/host/operations.h:
src/json/toolbelt_json.h:
src/json/field_codec.h:
src/json/syntax.h:
