build-fp/obj/src/supervisor/record_file.o: src/supervisor/record_file.c \
 src/supervisor/record_file.h src/core/util.h include/airlock/contract.h \
 src/supervisor/fault.h
src/supervisor/record_file.h:
src/core/util.h:
include/airlock/contract.h:
src/supervisor/fault.h:
