build-fp/obj/src/cgroup/mount_table.o: src/cgroup/mount_table.c \
 src/cgroup/mount_table.h
src/cgroup/mount_table.h:
