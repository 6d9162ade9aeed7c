build-fp/obj/src/core/cache_files.o: src/core/cache_files.c \
 src/core/cache_files.h
src/core/cache_files.h:
