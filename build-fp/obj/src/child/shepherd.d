build-fp/obj/src/child/shepherd.o: src/child/shepherd.c \
 src/child/shepherd.h include/airlock/error.h src/child/supervise.h \
 include/airlock/contract.h include/airlock/provider.h
src/child/shepherd.h:
include/airlock/error.h:
src/child/supervise.h:
include/airlock/contract.h:
include/airlock/provider.h:
