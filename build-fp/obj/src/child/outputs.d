build-fp/obj/src/child/outputs.o: src/child/outputs.c src/child/outputs.h \
 include/airlock/contract.h include/airlock/json.h \
 include/airlock/error.h src/bundle/beneath.h src/core/hash.h \
 src/core/util.h
src/child/outputs.h:
include/airlock/contract.h:
include/airlock/json.h:
include/airlock/error.h:
src/bundle/beneath.h:
src/core/hash.h:
src/core/util.h:
