build-fp/obj/src/host/env_policy.o: src/host/env_policy.c \
 src/host/env_policy.h src/json/syntax.h
src/host/env_policy.h:
src/json/syntax.h:
