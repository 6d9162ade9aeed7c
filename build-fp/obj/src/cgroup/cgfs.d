build-fp/obj/src/cgroup/cgfs.o: src/cgroup/cgfs.c src/cgroup/cgfs.h \
 src/core/util.h include/airlock/contract.h
src/cgroup/cgfs.h:
src/core/util.h:
include/airlock/contract.h:
