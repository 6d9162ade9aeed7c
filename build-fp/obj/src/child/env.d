build-fp/obj/src/child/env.o: src/child/env.c src/core/util.h \
 include/airlock/contract.h src/json/syntax.h src/child/env.h \
 include/airlock/provider.h include/airlock/error.h src/child/tool_env.h
src/core/util.h:
include/airlock/contract.h:
src/json/syntax.h:
src/child/env.h:
include/airlock/provider.h:
include/airlock/error.h:
src/child/tool_env.h:
