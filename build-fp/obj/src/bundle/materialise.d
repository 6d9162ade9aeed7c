build-fp/obj/src/bundle/materialise.o: src/bundle/materialise.c \
 src/bundle/bundle.h include/airlock/provider.h \
 include/airlock/contract.h include/airlock/error.h src/bundle/beneath.h \
 src/core/hash.h
src/bundle/bundle.h:
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
src/bundle/beneath.h:
src/core/hash.h:
