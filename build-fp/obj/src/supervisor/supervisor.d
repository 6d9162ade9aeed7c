build-fp/obj/src/supervisor/supervisor.o: src/supervisor/supervisor.c \
 src/supervisor/supervisor.h include/airlock/json.h \
 include/airlock/contract.h include/airlock/error.h \
 include/airlock/provider.h src/bundle/bundle.h src/core/log.h \
 src/core/util.h src/host/build_cache_dir.h src/host/judge.h \
 src/child/artifacts.h src/child/rundir.h src/supervisor/control.h \
 src/supervisor/record_file.h src/supervisor/identity.h \
 src/supervisor/inbox.h src/supervisor/outlog.h src/supervisor/reuse.h \
 src/cgroup/cgroup.h src/supervisor/run_records.h \
 src/supervisor/toolbelt.h src/sandbox/sandbox.h
src/supervisor/supervisor.h:
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/provider.h:
src/bundle/bundle.h:
src/core/log.h:
src/core/util.h:
src/host/build_cache_dir.h:
src/host/judge.h:
src/child/artifacts.h:
src/child/rundir.h:
src/supervisor/control.h:
src/supervisor/record_file.h:
src/supervisor/identity.h:
src/supervisor/inbox.h:
src/supervisor/outlog.h:
src/supervisor/reuse.h:
src/cgroup/cgroup.h:
src/supervisor/run_records.h:
src/supervisor/toolbelt.h:
src/sandbox/sandbox.h:
