build-fp/obj/src/cli/run_exec.o: src/cli/run_exec.c src/cli/cli.h
src/cli/cli.h:
