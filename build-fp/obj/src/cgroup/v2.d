build-fp/obj/src/cgroup/v2.o: src/cgroup/v2.c src/cgroup/cgfs.h \
 src/cgroup/manager.h src/cgroup/cgroup.h include/airlock/contract.h \
 include/airlock/error.h
src/cgroup/cgfs.h:
src/cgroup/manager.h:
src/cgroup/cgroup.h:
include/airlock/contract.h:
include/airlock/error.h:
