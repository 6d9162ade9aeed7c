build-fp/obj/src/lang/languages.o: src/lang/languages.c \
 src/lang/languages.h include/airlock/error.h src/lang/locate.h \
 src/lang/observe.h src/lang/table.h src/lang/observe_compiled.h \
 src/lang/path_memo.h src/lang/toolchain_cache.h
src/lang/languages.h:
include/airlock/error.h:
src/lang/locate.h:
src/lang/observe.h:
src/lang/table.h:
src/lang/observe_compiled.h:
src/lang/path_memo.h:
src/lang/toolchain_cache.h:
