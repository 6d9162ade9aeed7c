build-fp/obj/src/json/utf8.o: src/json/utf8.c include/airlock/json.h \
 include/airlock/contract.h include/airlock/error.h
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
