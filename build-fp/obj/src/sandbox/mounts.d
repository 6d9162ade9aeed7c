build-fp/obj/src/sandbox/mounts.o: src/sandbox/mounts.c \
 src/sandbox/mounts.h include/airlock/contract.h include/airlock/error.h \
 include/airlock/provider.h include/airlock/json.h src/core/util.h \
 src/tool/proto.h
src/sandbox/mounts.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/provider.h:
include/airlock/json.h:
src/core/util.h:
src/tool/proto.h:
