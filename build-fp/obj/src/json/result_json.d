build-fp/obj/src/json/result_json.o: src/json/result_json.c \
 include/airlock/json.h include/airlock/contract.h \
 include/airlock/error.h src/core/util.h src/json/contract_json.h \
 src/json/field_codec.h src/json/build_json.h src/json/toolbelt_json.h \
 src/json/result_fields.h
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/core/util.h:
src/json/contract_json.h:
src/json/field_codec.h:
src/json/build_json.h:
src/json/toolbelt_json.h:
src/json/result_fields.h:
