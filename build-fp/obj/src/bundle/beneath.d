build-fp/obj/src/bundle/beneath.o: src/bundle/beneath.c \
 src/bundle/beneath.h
src/bundle/beneath.h:
