build-fp/obj/src/json/limits_table.o: src/json/limits_table.c \
 src/json/limits_table.h include/airlock/contract.h
src/json/limits_table.h:
include/airlock/contract.h:
