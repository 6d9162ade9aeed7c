build-fp/obj/src/json/request_emit.o: src/json/request_emit.c \
 include/airlock/json.h include/airlock/contract.h \
 include/airlock/error.h src/json/build_json.h src/json/field_codec.h \
 src/json/limits_table.h src/json/toolbelt_json.h \
 src/json/request_fields.h
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/json/build_json.h:
src/json/field_codec.h:
src/json/limits_table.h:
src/json/toolbelt_json.h:
src/json/request_fields.h:
