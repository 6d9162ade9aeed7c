build-fp/obj/src/host/operations.o: src/host/operations.c \
 src/host/operations.h include/airlock/contract.h include/airlock/error.h \
 src/json/toolbelt_json.h src/json/field_codec.h src/tool/proto.h
src/host/operations.h:
include/airlock/contract.h:
include/airlock/error.h:
src/json/toolbelt_json.h:
src/json/field_codec.h:
src/tool/proto.h:
