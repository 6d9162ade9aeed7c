build-fp/obj/src/child/run_report.o: src/child/run_report.c \
 src/child/run_report.h include/airlock/contract.h src/core/util.h \
 src/child/artifacts.h include/airlock/error.h include/airlock/provider.h \
 src/child/rundir.h
src/child/run_report.h:
include/airlock/contract.h:
src/core/util.h:
src/child/artifacts.h:
include/airlock/error.h:
include/airlock/provider.h:
src/child/rundir.h:
