build-fp/obj/src/host/select.o: src/host/select.c src/host/select.h \
 src/host/config.h include/airlock/contract.h include/airlock/host.h \
 include/airlock/error.h include/airlock/provider.h src/lang/languages.h
src/host/select.h:
src/host/config.h:
include/airlock/contract.h:
include/airlock/host.h:
include/airlock/error.h:
include/airlock/provider.h:
src/lang/languages.h:
