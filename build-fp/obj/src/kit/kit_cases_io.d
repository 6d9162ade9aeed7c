build-fp/obj/src/kit/kit_cases_io.o: src/kit/kit_cases_io.c src/kit/kit.h \
 include/airlock/contract.h include/airlock/contract_kit.h \
 include/airlock/provider.h include/airlock/error.h src/kit/kit_cases.h
src/kit/kit.h:
include/airlock/contract.h:
include/airlock/contract_kit.h:
include/airlock/provider.h:
include/airlock/error.h:
src/kit/kit_cases.h:
