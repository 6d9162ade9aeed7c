build-fp/obj/src/lang/version.o: src/lang/version.c src/lang/languages.h \
 include/airlock/error.h
src/lang/languages.h:
include/airlock/error.h:
