build-fp/obj/src/sandbox/warm_python.o: src/sandbox/warm_python.c \
 src/sandbox/warm_loaders.h
src/sandbox/warm_loaders.h:
