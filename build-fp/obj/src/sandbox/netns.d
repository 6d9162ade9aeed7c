build-fp/obj/src/sandbox/netns.o: src/sandbox/netns.c src/sandbox/netns.h
src/sandbox/netns.h:
