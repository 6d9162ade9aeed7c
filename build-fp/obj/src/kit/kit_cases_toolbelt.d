build-fp/obj/src/kit/kit_cases_toolbelt.o: src/kit/kit_cases_toolbelt.c \
 include/airlock/json.h include/airlock/contract.h \
 include/airlock/error.h src/core/util.h src/kit/kit_cases.h \
 src/kit/kit.h include/airlock/contract_kit.h include/airlock/provider.h \
 src/supervisor/toolbelt.h
include/airlock/json.h:
include/airlock/contract.h:
include/airlock/error.h:
src/core/util.h:
src/kit/kit_cases.h:
src/kit/kit.h:
include/airlock/contract_kit.h:
include/airlock/provider.h:
src/supervisor/toolbelt.h:
