build-fp/obj/src/sandbox/userns.o: src/sandbox/userns.c \
 src/sandbox/userns.h
src/sandbox/userns.h:
