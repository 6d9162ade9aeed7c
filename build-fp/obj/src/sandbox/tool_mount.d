build-fp/obj/src/sandbox/tool_mount.o: src/sandbox/tool_mount.c \
 src/sandbox/tool_mount.h src/tool/proto.h
src/sandbox/tool_mount.h:
src/tool/proto.h:
