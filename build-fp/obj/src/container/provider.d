build-fp/obj/src/container/provider.o: src/container/provider.c \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h src/bundle/bundle.h src/container/container.h \
 src/child/rundir.h src/child/supervise.h src/core/run_registry.h \
 src/core/util.h src/lang/languages.h src/child/artifacts.h \
 src/child/env.h src/child/outputs.h src/providers/builtin.h \
 src/providers/cache_dir.h src/sandbox/runbase.h src/sandbox/userns.h
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
src/bundle/bundle.h:
src/container/container.h:
src/child/rundir.h:
src/child/supervise.h:
src/core/run_registry.h:
src/core/util.h:
src/lang/languages.h:
src/child/artifacts.h:
src/child/env.h:
src/child/outputs.h:
src/providers/builtin.h:
src/providers/cache_dir.h:
src/sandbox/runbase.h:
src/sandbox/userns.h:
