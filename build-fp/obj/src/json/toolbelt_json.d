build-fp/obj/src/json/toolbelt_json.o: src/json/toolbelt_json.c \
 src/json/toolbelt_json.h include/airlock/contract.h \
 src/json/field_codec.h include/airlock/error.h src/tool/proto.h
src/json/toolbelt_json.h:
include/airlock/contract.h:
src/json/field_codec.h:
include/airlock/error.h:
src/tool/proto.h:
