build-fp/obj/src/cli/cmd_image.o: src/cli/cmd_image.c src/cli/cli.h \
 src/container/container.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/provider.h src/child/rundir.h \
 src/child/supervise.h src/core/util.h
src/cli/cli.h:
src/container/container.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/provider.h:
src/child/rundir.h:
src/child/supervise.h:
src/core/util.h:
