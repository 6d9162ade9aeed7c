build-fp/obj/src/cgroup/clone.o: src/cgroup/clone.c src/cgroup/cgroup.h \
 include/airlock/contract.h include/airlock/error.h src/core/clone_vm.h
src/cgroup/cgroup.h:
include/airlock/contract.h:
include/airlock/error.h:
src/core/clone_vm.h:
