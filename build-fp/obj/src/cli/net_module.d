build-fp/obj/src/cli/net_module.o: src/cli/net_module.c \
 include/airlock/provider.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/server.h \
 src/container/container.h src/child/rundir.h src/child/supervise.h \
 src/core/util.h src/netmod/host_api.h include/airlock/host.h \
 include/airlock/json.h src/cgroup/cgroup.h src/child/artifacts.h \
 src/child/shepherd.h src/child/supervise.h src/core/dir_spread.h \
 src/core/log.h src/core/run_registry.h src/host/admission.h \
 src/host/config.h src/host/db.h src/host/forwarded_env.h \
 src/host/secrets.h src/host/state_dir.h src/json/base64.h \
 src/lang/languages.h src/sandbox/sandbox.h src/supervisor/control.h \
 src/supervisor/fault.h src/supervisor/identity.h src/supervisor/inbox.h \
 src/supervisor/outlog.h src/supervisor/record_file.h \
 src/supervisor/retention.h src/supervisor/run_records.h \
 src/supervisor/toolbelt.h
include/airlock/provider.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/server.h:
src/container/container.h:
src/child/rundir.h:
src/child/supervise.h:
src/core/util.h:
src/netmod/host_api.h:
include/airlock/host.h:
include/airlock/json.h:
src/cgroup/cgroup.h:
src/child/artifacts.h:
src/child/shepherd.h:
src/child/supervise.h:
src/core/dir_spread.h:
src/core/log.h:
src/core/run_registry.h:
src/host/admission.h:
src/host/config.h:
src/host/db.h:
src/host/forwarded_env.h:
src/host/secrets.h:
src/host/state_dir.h:
src/json/base64.h:
src/lang/languages.h:
src/sandbox/sandbox.h:
src/supervisor/control.h:
src/supervisor/fault.h:
src/supervisor/identity.h:
src/supervisor/inbox.h:
src/supervisor/outlog.h:
src/supervisor/record_file.h:
src/supervisor/retention.h:
src/supervisor/run_records.h:
src/supervisor/toolbelt.h:
