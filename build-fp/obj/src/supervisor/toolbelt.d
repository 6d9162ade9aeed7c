build-fp/obj/src/supervisor/toolbelt.o: src/supervisor/toolbelt.c \
 src/supervisor/toolbelt.h include/airlock/contract.h \
 include/airlock/json.h include/airlock/error.h src/core/log.h \
 src/core/util.h src/json/limits_table.h src/json/toolbelt_json.h \
 src/json/field_codec.h src/supervisor/record_file.h src/tool/proto.h
src/supervisor/toolbelt.h:
include/airlock/contract.h:
include/airlock/json.h:
include/airlock/error.h:
src/core/log.h:
src/core/util.h:
src/json/limits_table.h:
src/json/toolbelt_json.h:
src/json/field_codec.h:
src/supervisor/record_file.h:
src/tool/proto.h:
