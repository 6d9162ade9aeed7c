build-fp/obj/src/core/build_contract.o: src/core/build_contract.c \
 include/airlock/contract.h src/core/build_contract.h src/core/util.h
include/airlock/contract.h:
src/core/build_contract.h:
src/core/util.h:
