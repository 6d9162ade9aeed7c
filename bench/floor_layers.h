/* The mechanisms airlock's sandbox provider applies per run, as bare
 * kernel calls, cumulative by level (bench/README.md, "The floor"). */
#ifndef FLOOR_LAYERS_H
#define FLOOR_LAYERS_H

#include <stdbool.h>

enum fl_level {
	FL_NS = 1,   /* airlock's clone flags, cgroup namespace, init forks */
	FL_CGROUPS,  /* + v2 and v1 memory/pids cgroups with limits */
	FL_MOUNTS,   /* + the tmpfs root, 47 mounts, pivot_root */
	FL_CREDS,    /* + unprivileged ids, user namespace, no capabilities */
	FL_LSM,	     /* + Landlock ruleset and seccomp filter */
};

/* Once before the rounds: this process's own cgroups, the host's /bin
 * style symlinks, the compiled seccomp program.  0, or negative errno
 * with a message on stderr (the levels that need what failed then fail
 * per run and are counted as failed). */
int fl_prepare(void);

/* Frees what fl_prepare made. */
void fl_release(void);

/* One run of CMD under LEVEL: 0 when CMD exited 0.  VERBOSE prints the
 * cgroup figures read after the run (FLOOR_CHECK). */
int fl_run(enum fl_level level, char *const argv[], bool verbose);

/* A fresh network namespace, made by a thread that opens it and exits
 * (as airlock makes one ahead of a cold run): its descriptor, or a
 * negative errno. */
int fl_netns_make(void);

/* fl_run, the init joining NETNS_FD (setns) instead of a network
 * namespace made by clone3; the caller closes it. */
int fl_run_joining(enum fl_level level, int netns_fd, char *const argv[],
		   bool verbose);

#endif
