build-fp/obj/src/kit/kit_cases_exec.o: src/kit/kit_cases_exec.c \
 src/core/util.h include/airlock/contract.h src/kit/kit.h \
 include/airlock/contract_kit.h include/airlock/provider.h \
 include/airlock/error.h src/kit/kit_cases.h
src/core/util.h:
include/airlock/contract.h:
src/kit/kit.h:
include/airlock/contract_kit.h:
include/airlock/provider.h:
include/airlock/error.h:
src/kit/kit_cases.h:
