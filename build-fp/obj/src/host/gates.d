build-fp/obj/src/host/gates.o: src/host/gates.c src/host/gates.h \
 src/host/config.h include/airlock/contract.h include/airlock/host.h \
 include/airlock/error.h include/airlock/provider.h src/host/env_policy.h \
 src/host/plan.h
src/host/gates.h:
src/host/config.h:
include/airlock/contract.h:
include/airlock/host.h:
include/airlock/error.h:
include/airlock/provider.h:
src/host/env_policy.h:
src/host/plan.h:
