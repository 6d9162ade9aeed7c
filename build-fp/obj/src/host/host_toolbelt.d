build-fp/obj/src/host/host_toolbelt.o: src/host/host_toolbelt.c \
 src/host/host_toolbelt.h include/airlock/contract.h \
 src/supervisor/toolbelt.h include/airlock/json.h include/airlock/error.h \
 src/core/util.h src/child/rundir.h include/airlock/provider.h
src/host/host_toolbelt.h:
include/airlock/contract.h:
src/supervisor/toolbelt.h:
include/airlock/json.h:
include/airlock/error.h:
src/core/util.h:
src/child/rundir.h:
include/airlock/provider.h:
