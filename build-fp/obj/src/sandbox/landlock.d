build-fp/obj/src/sandbox/landlock.o: src/sandbox/landlock.c \
 src/sandbox/landlock.h
src/sandbox/landlock.h:
