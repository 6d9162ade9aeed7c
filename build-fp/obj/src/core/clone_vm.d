build-fp/obj/src/core/clone_vm.o: src/core/clone_vm.c src/core/clone_vm.h
src/core/clone_vm.h:
