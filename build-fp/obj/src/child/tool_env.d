build-fp/obj/src/child/tool_env.o: src/child/tool_env.c \
 src/child/tool_env.h src/child/env.h include/airlock/provider.h \
 include/airlock/contract.h include/airlock/error.h src/core/util.h \
 src/tool/proto.h
src/child/tool_env.h:
src/child/env.h:
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
src/core/util.h:
src/tool/proto.h:
