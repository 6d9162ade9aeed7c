build-fp/obj/src/lang/plan_compiled.o: src/lang/plan_compiled.c \
 src/lang/table.h src/lang/languages.h include/airlock/error.h
src/lang/table.h:
src/lang/languages.h:
include/airlock/error.h:
