build-fp/obj/src/json/syntax.o: src/json/syntax.c include/airlock/json.h \
 include/airlock/contract.h include/airlock/error.h src/json/syntax.h
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/json/syntax.h:
