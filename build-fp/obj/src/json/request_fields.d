build-fp/obj/src/json/request_fields.o: src/json/request_fields.c \
 include/airlock/json.h include/airlock/contract.h \
 include/airlock/error.h src/json/request_fields.h src/json/field_codec.h \
 src/json/syntax.h
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/json/request_fields.h:
src/json/field_codec.h:
src/json/syntax.h:
