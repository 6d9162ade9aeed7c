build-fp/obj/src/kit/kit_cases_build.o: src/kit/kit_cases_build.c \
 src/kit/kit.h include/airlock/contract.h include/airlock/contract_kit.h \
 include/airlock/provider.h include/airlock/error.h src/kit/kit_cases.h
src/kit/kit.h:
include/airlock/contract.h:
include/airlock/contract_kit.h:
include/airlock/provider.h:
include/airlock/error.h:
src/kit/kit_cases.h:
