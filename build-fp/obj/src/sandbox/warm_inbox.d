build-fp/obj/src/sandbox/warm_inbox.o: src/sandbox/warm_inbox.c \
 src/sandbox/warm_inbox.h include/airlock/json.h \
 include/airlock/contract.h include/airlock/error.h src/core/util.h
src/sandbox/warm_inbox.h:
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/core/util.h:
