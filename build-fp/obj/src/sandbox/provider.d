build-fp/obj/src/sandbox/provider.o: src/sandbox/provider.c \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h src/bundle/bundle.h src/core/run_registry.h \
 src/core/util.h src/lang/languages.h src/child/artifacts.h \
 src/child/rundir.h src/child/env.h src/child/exec_shape.h \
 src/child/outputs.h src/child/run_report.h src/core/build_contract.h \
 src/sandbox/build.h src/sandbox/run.h src/child/shepherd.h \
 src/child/supervise.h src/child/supervise.h src/cgroup/cgroup.h \
 src/sandbox/context.h src/sandbox/observation_cache.h \
 src/sandbox/seccomp_policy.h src/sandbox/mounts.h \
 src/sandbox/netns_ahead.h src/sandbox/pool.h src/sandbox/sandbox.h \
 src/sandbox/warm.h src/sandbox/userns.h src/sandbox/probe.h \
 src/sandbox/runbase.h src/tool/proto.h src/json/build_json.h \
 src/json/field_codec.h src/supervisor/outlog.h
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
src/core/build_contract.h:
src/sandbox/build.h:
src/sandbox/run.h:
src/child/shepherd.h:
src/child/supervise.h:
src/child/supervise.h:
src/cgroup/cgroup.h:
src/sandbox/context.h:
src/sandbox/observation_cache.h:
src/sandbox/seccomp_policy.h:
src/sandbox/mounts.h:
src/sandbox/netns_ahead.h:
src/sandbox/pool.h:
src/sandbox/sandbox.h:
src/sandbox/warm.h:
src/sandbox/userns.h:
src/sandbox/probe.h:
src/sandbox/runbase.h:
src/tool/proto.h:
src/json/build_json.h:
src/json/field_codec.h:
src/supervisor/outlog.h:
