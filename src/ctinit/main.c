/* airlock-init: pid 1 of a container run by the `container` provider.
 *
 * Without it the program itself would be pid 1 of its pid namespace, and
 * the kernel drops the signals a namespace's init does not handle —
 * including the ones it sends itself and SIGXCPU — so a program could
 * not die by a signal.  This init starts the program as its child, runs
 * the shepherd's loop as the namespace's init (reaps everything, forwards
 * SIGTERM, kills every process when the program ends) and writes the
 * exit report (the program's own wait status and the tree's usage) to
 * fd 3, or to the file named by "file:PATH" where the runtime cannot
 * pass a descriptor.  Static, so it runs in any image.
 *
 * With "stdin:PATH" it only opens PATH as the program's stdin and
 * becomes the program (the Docker variant, whose Engine has its own
 * init and no stdin pipe without an attached connection).
 *
 * usage: airlock-init fd|file:PATH|stdin:PATH -- PROGRAM ARGS... */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "child/shepherd.h"

int main(int argc, char **argv)
{
	if (argc < 4 || strcmp(argv[2], "--") != 0 || argv[3][0] != '/')
		return 127;
	int report = 3;
	if (strncmp(argv[1], "stdin:", 6) == 0) {
		int in = open(argv[1] + 6, O_RDONLY | O_CLOEXEC);
		if (in < 0 || dup2(in, 0) < 0)
			return 127;
		close(in);
		execv(argv[3], argv + 3);
		return 127;
	}
	/* The loop below is a namespace's init: its tree kill is kill(-1),
	 * which anywhere but as pid 1 reaches every process it may. */
	if (getpid() != 1)
		return 127;
	if (strncmp(argv[1], "file:", 5) == 0) {
		report = open(argv[1] + 5,
			      O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
				      O_NOFOLLOW,
			      0600);
		if (report < 0)
			return 127;
	} else if (strcmp(argv[1], "fd") != 0 ||
		   fcntl(report, F_SETFD, FD_CLOEXEC) < 0) {
		return 127;
	}
	/* The program runs as the same uid: not dumpable, the init's
	 * /proc files (environ, mem) stay root's. */
	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		return 127;
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, &old);
	pid_t program = fork();
	if (program < 0)
		return 127;
	if (program == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		execv(argv[3], argv + 3);
		_exit(127);
	}
	return al_shepherd_loop(program, report, true);
}
