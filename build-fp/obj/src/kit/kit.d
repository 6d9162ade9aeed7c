build-fp/obj/src/kit/kit.o: src/kit/kit.c include/airlock/contract_kit.h \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h src/core/util.h src/kit/kit.h
include/airlock/contract_kit.h:
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
src/core/util.h:
src/kit/kit.h:
