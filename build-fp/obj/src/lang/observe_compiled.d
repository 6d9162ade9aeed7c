build-fp/obj/src/lang/observe_compiled.o: src/lang/observe_compiled.c \
 src/lang/observe_compiled.h src/lang/table.h src/lang/languages.h \
 include/airlock/error.h src/lang/locate.h src/lang/probe_run.h
src/lang/observe_compiled.h:
src/lang/table.h:
src/lang/languages.h:
include/airlock/error.h:
src/lang/locate.h:
src/lang/probe_run.h:
