build-fp/obj/src/host/db_vfs.o: src/host/db_vfs.c src/host/db_vfs.h
src/host/db_vfs.h:
