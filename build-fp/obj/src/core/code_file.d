build-fp/obj/src/core/code_file.o: src/core/code_file.c \
 src/core/code_file.h
src/core/code_file.h:
