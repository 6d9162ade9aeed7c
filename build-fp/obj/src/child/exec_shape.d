build-fp/obj/src/child/exec_shape.o: src/child/exec_shape.c \
 src/child/exec_shape.h include/airlock/contract.h src/core/util.h
src/child/exec_shape.h:
include/airlock/contract.h:
src/core/util.h:
