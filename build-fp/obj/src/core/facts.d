build-fp/obj/src/core/facts.o: src/core/facts.c \
 include/airlock/contract.h src/core/util.h src/json/toolbelt_json.h \
 src/json/field_codec.h include/airlock/error.h
include/airlock/contract.h:
src/core/util.h:
src/json/toolbelt_json.h:
src/json/field_codec.h:
include/airlock/error.h:
