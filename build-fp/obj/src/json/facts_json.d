build-fp/obj/src/json/facts_json.o: src/json/facts_json.c \
 include/airlock/json.h include/airlock/contract.h \
 include/airlock/error.h src/json/contract_json.h src/json/field_codec.h \
 src/json/limits_table.h src/json/toolbelt_json.h
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/json/contract_json.h:
src/json/field_codec.h:
src/json/limits_table.h:
src/json/toolbelt_json.h:
