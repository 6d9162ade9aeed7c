build-fp/obj/src/lang/path_memo.o: src/lang/path_memo.c \
 src/lang/path_memo.h
src/lang/path_memo.h:
