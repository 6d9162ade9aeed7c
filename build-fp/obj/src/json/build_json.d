build-fp/obj/src/json/build_json.o: src/json/build_json.c \
 src/json/build_json.h include/airlock/contract.h src/json/field_codec.h \
 include/airlock/error.h include/airlock/json.h src/core/build_contract.h \
 src/json/limits_table.h
src/json/build_json.h:
include/airlock/contract.h:
src/json/field_codec.h:
include/airlock/error.h:
include/airlock/json.h:
src/core/build_contract.h:
src/json/limits_table.h:
