build-fp/obj/src/container/probe.o: src/container/probe.c \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h src/container/container.h src/child/rundir.h \
 src/child/supervise.h src/core/util.h src/lang/languages.h \
 src/providers/builtin.h src/providers/cache_dir.h src/sandbox/mounts.h \
 src/sandbox/runbase.h src/sandbox/userns.h
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
src/container/container.h:
src/child/rundir.h:
src/child/supervise.h:
src/core/util.h:
src/lang/languages.h:
src/providers/builtin.h:
src/providers/cache_dir.h:
src/sandbox/mounts.h:
src/sandbox/runbase.h:
src/sandbox/userns.h:
