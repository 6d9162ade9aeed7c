build-fp/obj/src/cli/cmd_run.o: src/cli/cmd_run.c \
 include/airlock/airlock.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/host.h \
 include/airlock/provider.h include/airlock/json.h src/bundle/beneath.h \
 src/core/hash.h src/cli/cli.h src/json/base64.h src/child/artifacts.h \
 src/child/rundir.h src/sandbox/sandbox.h
include/airlock/airlock.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/host.h:
include/airlock/provider.h:
include/airlock/json.h:
src/bundle/beneath.h:
src/core/hash.h:
src/cli/cli.h:
src/json/base64.h:
src/child/artifacts.h:
src/child/rundir.h:
src/sandbox/sandbox.h:
