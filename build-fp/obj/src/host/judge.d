build-fp/obj/src/host/judge.o: src/host/judge.c src/host/judge.h \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h src/core/build_contract.h src/core/util.h \
 src/lang/languages.h
src/host/judge.h:
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
src/core/build_contract.h:
src/core/util.h:
src/lang/languages.h:
