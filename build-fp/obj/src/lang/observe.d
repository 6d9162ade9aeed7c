build-fp/obj/src/lang/observe.o: src/lang/observe.c src/lang/observe.h \
 src/lang/table.h src/lang/languages.h include/airlock/error.h \
 src/lang/locate.h src/lang/probe_run.h
src/lang/observe.h:
src/lang/table.h:
src/lang/languages.h:
include/airlock/error.h:
src/lang/locate.h:
src/lang/probe_run.h:
