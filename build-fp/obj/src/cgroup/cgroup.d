build-fp/obj/src/cgroup/cgroup.o: src/cgroup/cgroup.c src/cgroup/cgroup.h \
 include/airlock/contract.h include/airlock/error.h src/cgroup/cgfs.h \
 src/cgroup/manager.h src/cgroup/mount_table.h src/cgroup/sweep.h \
 src/core/util.h
src/cgroup/cgroup.h:
include/airlock/contract.h:
include/airlock/error.h:
src/cgroup/cgfs.h:
src/cgroup/manager.h:
src/cgroup/mount_table.h:
src/cgroup/sweep.h:
src/core/util.h:
