build-fp/obj/src/supervisor/fault.o: src/supervisor/fault.c \
 src/supervisor/fault.h src/core/log.h
src/supervisor/fault.h:
src/core/log.h:
