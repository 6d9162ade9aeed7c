build-fp/obj/src/json/request_parse.o: src/json/request_parse.c \
 include/airlock/json.h include/airlock/contract.h \
 include/airlock/error.h src/bundle/bundle.h include/airlock/provider.h \
 src/json/field_codec.h src/json/build_json.h src/json/limits_table.h \
 src/json/request_fields.h src/json/syntax.h src/json/toolbelt_json.h
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/bundle/bundle.h:
include/airlock/provider.h:
src/json/field_codec.h:
src/json/build_json.h:
src/json/limits_table.h:
src/json/request_fields.h:
src/json/syntax.h:
src/json/toolbelt_json.h:
