build-fp/obj/src/child/build_cache.o: src/child/build_cache.c \
 src/child/build_cache.h src/lang/languages.h include/airlock/error.h \
 src/lang/locate.h
src/child/build_cache.h:
src/lang/languages.h:
include/airlock/error.h:
src/lang/locate.h:
