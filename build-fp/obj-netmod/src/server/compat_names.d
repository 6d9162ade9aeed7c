build-fp/obj-netmod/src/server/compat_names.o: src/server/compat_names.c \
 src/server/compat_names.h
src/server/compat_names.h:
