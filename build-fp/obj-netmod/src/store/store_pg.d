build-fp/obj-netmod/src/store/store_pg.o: src/store/store_pg.c \
 src/store/store.h include/airlock/error.h src/store/store_common.h \
 /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h include/airlock/json.h \
 include/airlock/contract.h build-fp/gen/store_migrations.inc
src/store/store.h:
include/airlock/error.h:
src/store/store_common.h:
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
include/airlock/json.h:
include/airlock/contract.h:
build-fp/gen/store_migrations.inc:
