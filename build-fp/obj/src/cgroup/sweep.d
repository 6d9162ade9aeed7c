build-fp/obj/src/cgroup/sweep.o: src/cgroup/sweep.c src/cgroup/cgroup.h \
 include/airlock/contract.h include/airlock/error.h src/cgroup/cgfs.h \
 src/cgroup/sweep.h
src/cgroup/cgroup.h:
include/airlock/contract.h:
include/airlock/error.h:
src/cgroup/cgfs.h:
src/cgroup/sweep.h:
