build-fp/obj/src/bundle/bundle.o: src/bundle/bundle.c src/bundle/bundle.h \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/json.h src/json/syntax.h \
 src/lang/languages.h
src/bundle/bundle.h:
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/json.h:
src/json/syntax.h:
src/lang/languages.h:
