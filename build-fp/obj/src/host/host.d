build-fp/obj/src/host/host.o: src/host/host.c src/host/host_internal.h \
 include/airlock/host.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/provider.h src/host/config.h \
 src/host/db.h src/host/idempotency.h src/host/metrics.h \
 src/host/select.h src/host/slots.h src/child/artifacts.h \
 src/child/rundir.h include/airlock/json.h src/bundle/bundle.h \
 src/core/log.h src/host/admission.h src/host/audit.h \
 src/host/build_cache_dir.h src/host/forwarded_env.h src/host/gates.h \
 src/host/judge.h src/host/plan.h src/host/run_env.h src/host/secrets.h \
 src/host/host_toolbelt.h src/supervisor/toolbelt.h src/host/operations.h \
 src/json/toolbelt_json.h src/json/field_codec.h src/core/util.h \
 src/lang/languages.h
src/host/host_internal.h:
include/airlock/host.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/provider.h:
src/host/config.h:
src/host/db.h:
src/host/idempotency.h:
src/host/metrics.h:
src/host/select.h:
src/host/slots.h:
src/child/artifacts.h:
src/child/rundir.h:
include/airlock/json.h:
src/bundle/bundle.h:
src/core/log.h:
src/host/admission.h:
src/host/audit.h:
src/host/build_cache_dir.h:
src/host/forwarded_env.h:
src/host/gates.h:
src/host/judge.h:
src/host/plan.h:
src/host/run_env.h:
src/host/secrets.h:
src/host/host_toolbelt.h:
src/supervisor/toolbelt.h:
src/host/operations.h:
src/json/toolbelt_json.h:
src/json/field_codec.h:
src/core/util.h:
src/lang/languages.h:
