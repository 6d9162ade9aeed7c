build-fp/obj/src/cgroup/run_tree.o: src/cgroup/run_tree.c \
 src/cgroup/cgroup.h include/airlock/contract.h include/airlock/error.h \
 src/cgroup/cgfs.h src/core/util.h
src/cgroup/cgroup.h:
include/airlock/contract.h:
include/airlock/error.h:
src/cgroup/cgfs.h:
src/core/util.h:
