build-fp/obj/src/sandbox/warm_node.o: src/sandbox/warm_node.c \
 src/sandbox/warm_loaders.h
src/sandbox/warm_loaders.h:
