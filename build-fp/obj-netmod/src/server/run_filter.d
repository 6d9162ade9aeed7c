build-fp/obj-netmod/src/server/run_filter.o: src/server/run_filter.c \
 src/lang/languages.h include/airlock/error.h src/server/run_filter.h \
 include/airlock/contract.h
src/lang/languages.h:
include/airlock/error.h:
src/server/run_filter.h:
include/airlock/contract.h:
