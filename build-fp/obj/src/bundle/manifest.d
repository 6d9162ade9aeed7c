build-fp/obj/src/bundle/manifest.o: src/bundle/manifest.c \
 src/bundle/bundle.h include/airlock/provider.h \
 include/airlock/contract.h include/airlock/error.h \
 include/airlock/json.h src/json/syntax.h
src/bundle/bundle.h:
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/json.h:
src/json/syntax.h:
