build-fp/obj/src/supervisor/identity.o: src/supervisor/identity.c \
 src/supervisor/identity.h
src/supervisor/identity.h:
