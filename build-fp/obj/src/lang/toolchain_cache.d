build-fp/obj/src/lang/toolchain_cache.o: src/lang/toolchain_cache.c \
 src/lang/toolchain_cache.h src/lang/locate.h src/lang/table.h \
 src/lang/languages.h include/airlock/error.h include/airlock/json.h \
 include/airlock/contract.h src/core/cache_files.h
src/lang/toolchain_cache.h:
src/lang/locate.h:
src/lang/table.h:
src/lang/languages.h:
include/airlock/error.h:
include/airlock/json.h:
include/airlock/contract.h:
src/core/cache_files.h:
