build-fp/obj/src/kit/kit_exec.o: src/kit/kit_exec.c \
 include/airlock/error.h src/core/util.h include/airlock/contract.h \
 src/kit/kit.h include/airlock/contract_kit.h include/airlock/provider.h
include/airlock/error.h:
src/core/util.h:
include/airlock/contract.h:
src/kit/kit.h:
include/airlock/contract_kit.h:
include/airlock/provider.h:
