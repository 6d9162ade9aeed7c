build-fp/obj/src/supervisor/reuse.o: src/supervisor/reuse.c \
 src/supervisor/reuse.h src/cgroup/cgfs.h src/core/hash.h src/core/util.h \
 include/airlock/contract.h
src/supervisor/reuse.h:
src/cgroup/cgfs.h:
src/core/hash.h:
src/core/util.h:
include/airlock/contract.h:
