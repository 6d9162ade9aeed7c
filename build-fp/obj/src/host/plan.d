build-fp/obj/src/host/plan.o: src/host/plan.c src/host/plan.h \
 include/airlock/contract.h
src/host/plan.h:
include/airlock/contract.h:
