/* Internal: the shepherd — a small process between a provider and the
 * program that owns the program's tree.
 *
 * It becomes a child subreaper, starts the program in a new session (no
 * controlling terminal), reaps everything that is reparented to it, and
 * when the program ends kills whatever the program left behind before it
 * writes the exit report.  SIGTERM sent to the shepherd is forwarded to the
 * whole tree; SIGUSR1 makes it SIGKILL the whole tree (repeatedly, until
 * nothing is left) and report.
 *
 * The sandbox provider runs the same loop as pid 1 of its pid namespace
 * (al_shepherd_loop with as_init = true), where killing "the tree" is
 * kill(-1, ...) within the namespace.
 */
#ifndef AL_CHILD_SHEPHERD_H
#define AL_CHILD_SHEPHERD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <airlock/error.h>

#include "supervise.h"

typedef struct al_rlimit_spec {
	int resource; /* RLIMIT_* */
	rlim_t value; /* soft = hard = value */
} al_rlimit_spec;

/* The rlimits every run gets from its limits (core 0, open files, file
 * size, CPU seconds rounded up) into out[AL_CHILD_RLIMITS_MAX]; returns
 * how many. */
#define AL_CHILD_RLIMITS_MAX 5
size_t al_child_rlimits(const al_limits *l, al_rlimit_spec *out);

/* Blocks, and puts into set, the signals a shepherd waits for (the
 * program's end, a stop, a tree kill request): a shepherd and the
 * sandbox's init both take them with sigwaitinfo. */
void al_shepherd_block_signals(sigset_t *set);

typedef struct al_spawn_spec {
	char *const *argv; /* argv[0] absolute */
	char *const *envp;
	const char *cwd;
	const al_rlimit_spec *rlimits;
	size_t n_rlimits;
	bool stdin_pipe; /* false: stdin is /dev/null */
	/* stdin_src is the program's stdin (a live stream; stdin_pipe is
	 * then ignored) */
	bool stdin_external;
	int stdin_src;
} al_spawn_spec;

/* Forks a shepherd which starts spec->argv.  Fills child (pipes, pidfd,
 * signal_tree).  Returns 0 or a negative errno with err set (start_failed:
 * the exec itself failed is reported through the exit report as status
 * 127 << 8 with the reason in err only when detectable early). */
int al_shepherd_spawn(const al_spawn_spec *spec, al_child *child,
		      al_error **err);

/* Tears down a child whose start failed or that was never supervised:
 * kills its tree, reaps it, closes every fd and frees signal_ctx. */
void al_child_discard(al_child *child);

/* Runs in an already-forked process: starts nothing, supervises `program`
 * (already running, a child of the caller) to the end, writes the report
 * to status_fd and returns the exit code the caller should _exit with.
 * as_init: the caller is pid 1 of a pid namespace. */
int al_shepherd_loop(pid_t program, int status_fd, bool as_init);

/* Closes every fd >= lowfd except those listed (close_range where it can). */
void al_close_fds_from(int lowfd, const int *keep, size_t n_keep);

#endif
