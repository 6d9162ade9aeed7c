build-fp/obj/src/core/error.o: src/core/error.c include/airlock/error.h
include/airlock/error.h:
