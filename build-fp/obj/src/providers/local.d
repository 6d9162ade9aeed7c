build-fp/obj/src/providers/local.o: src/providers/local.c \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h src/bundle/bundle.h src/core/run_registry.h \
 src/core/util.h src/lang/languages.h src/child/artifacts.h \
 src/child/rundir.h src/child/env.h src/child/exec_shape.h \
 src/child/outputs.h src/child/run_report.h src/child/shepherd.h \
 src/child/supervise.h src/providers/builtin.h src/providers/cache_dir.h \
 src/sandbox/mounts.h
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
src/bundle/bundle.h:
src/core/run_registry.h:
src/core/util.h:
src/lang/languages.h:
src/child/artifacts.h:
src/child/rundir.h:
src/child/env.h:
src/child/exec_shape.h:
src/child/outputs.h:
src/child/run_report.h:
src/child/shepherd.h:
src/child/supervise.h:
src/providers/builtin.h:
src/providers/cache_dir.h:
src/sandbox/mounts.h:
