build-fp/obj/src/json/field_codec.o: src/json/field_codec.c \
 include/airlock/json.h include/airlock/contract.h \
 include/airlock/error.h src/json/base64.h src/json/field_codec.h
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/json/base64.h:
src/json/field_codec.h:
