build-fp/obj/src/core/dir_spread.o: src/core/dir_spread.c \
 src/core/dir_spread.h
src/core/dir_spread.h:
