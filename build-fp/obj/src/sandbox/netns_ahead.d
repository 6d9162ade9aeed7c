build-fp/obj/src/sandbox/netns_ahead.o: src/sandbox/netns_ahead.c \
 src/sandbox/netns_ahead.h
src/sandbox/netns_ahead.h:
