build-fp/obj/src/container/keeper.o: src/container/keeper.c \
 src/container/container.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/provider.h src/child/rundir.h \
 src/child/supervise.h src/child/shepherd.h src/child/supervise.h \
 src/sandbox/netns.h
src/container/container.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/provider.h:
src/child/rundir.h:
src/child/supervise.h:
src/child/shepherd.h:
src/child/supervise.h:
src/sandbox/netns.h:
