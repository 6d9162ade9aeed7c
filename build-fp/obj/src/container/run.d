build-fp/obj/src/container/run.o: src/container/run.c \
 src/container/container.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/provider.h src/child/rundir.h \
 src/child/supervise.h src/core/util.h src/cgroup/cgroup.h \
 src/sandbox/warm_inbox.h
src/container/container.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/provider.h:
src/child/rundir.h:
src/child/supervise.h:
src/core/util.h:
src/cgroup/cgroup.h:
src/sandbox/warm_inbox.h:
