build-fp/obj/src/cli/cmd_runs.o: src/cli/cmd_runs.c \
 include/airlock/airlock.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/host.h \
 include/airlock/provider.h include/airlock/json.h src/cli/cli.h \
 src/host/config.h src/host/db.h src/host/idempotency.h \
 src/child/artifacts.h src/child/rundir.h src/supervisor/retention.h
include/airlock/airlock.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/host.h:
include/airlock/provider.h:
include/airlock/json.h:
src/cli/cli.h:
src/host/config.h:
src/host/db.h:
src/host/idempotency.h:
src/child/artifacts.h:
src/child/rundir.h:
src/supervisor/retention.h:
