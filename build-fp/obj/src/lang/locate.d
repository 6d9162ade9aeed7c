build-fp/obj/src/lang/locate.o: src/lang/locate.c src/lang/locate.h \
 src/lang/path_memo.h src/lang/table.h src/lang/languages.h \
 include/airlock/error.h
src/lang/locate.h:
src/lang/path_memo.h:
src/lang/table.h:
src/lang/languages.h:
include/airlock/error.h:
