build-fp/obj/src/json/base64.o: src/json/base64.c src/json/base64.h
src/json/base64.h:
