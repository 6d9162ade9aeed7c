build-fp/obj-netmod/src/store/store_sqlite.o: src/store/store_sqlite.c \
 src/store/store.h include/airlock/error.h src/core/log.h \
 src/store/store_common.h build-fp/gen/store_sqlite_migrations.inc
src/store/store.h:
include/airlock/error.h:
src/core/log.h:
src/store/store_common.h:
build-fp/gen/store_sqlite_migrations.inc:
