build-fp/obj/src/host/db.o: src/host/db.c src/host/db.h \
 include/airlock/error.h src/host/db_vfs.h src/host/state_dir.h
src/host/db.h:
include/airlock/error.h:
src/host/db_vfs.h:
src/host/state_dir.h:
