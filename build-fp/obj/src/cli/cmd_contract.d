build-fp/obj/src/cli/cmd_contract.o: src/cli/cmd_contract.c \
 include/airlock/airlock.h include/airlock/contract.h \
 include/airlock/error.h include/airlock/host.h \
 include/airlock/provider.h include/airlock/json.h \
 include/airlock/contract_kit.h src/cli/cli.h
include/airlock/airlock.h:
include/airlock/contract.h:
include/airlock/error.h:
include/airlock/host.h:
include/airlock/provider.h:
include/airlock/json.h:
include/airlock/contract_kit.h:
src/cli/cli.h:
