build-fp/obj/src/supervisor/control.o: src/supervisor/control.c \
 src/supervisor/control.h src/supervisor/record_file.h \
 src/supervisor/run_records.h src/supervisor/identity.h
src/supervisor/control.h:
src/supervisor/record_file.h:
src/supervisor/run_records.h:
src/supervisor/identity.h:
