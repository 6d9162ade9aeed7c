build-fp/obj/src/host/state_dir.o: src/host/state_dir.c \
 src/host/state_dir.h include/airlock/error.h
src/host/state_dir.h:
include/airlock/error.h:
