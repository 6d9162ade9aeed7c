/* The kernel's floor under a sandboxed run on this machine: what `clone3`
 * into new namespaces, `execve` and `wait` cost alone, then what each
 * mechanism airlock applies per run adds, with no bookkeeping.
 * Interleaved run by run with bubblewrap on the same command, it says how
 * much of airlock's per-run cost is physical (bench/README.md, "The
 * floor").
 *
 * usage: floor ROUNDS CMD [ARG...]
 *
 * Variants, in turn each round:
 *   bare     fork (clone3, no flags) + execve CMD + wait
 *   ns       clone3 into new user, pid, mount, ipc, uts, cgroup and
 *            network namespaces + execve CMD + wait
 *   ns-nonet the same without the network namespace
 *   bwrap    bwrap --unshare-all (the bench's argument list) CMD, spawned
 *            like bare (only when /usr/bin/bwrap is executable)
 * and airlock's per-run mechanisms without its bookkeeping, each adding
 * one layer to the one before (floor_layers.c; needs root):
 *   al-ns    airlock's clone flags, a cgroup namespace, an init that
 *            forks the program and waits
 *   +cgroups v2, v1 memory and v1 pids cgroups with limits, read, removed
 *   +mounts  the tmpfs root with airlock's 47 mounts and pivot_root
 *   +creds   unprivileged ids, user namespace, no capabilities,
 *            no_new_privs
 *   +lsm     a Landlock ruleset and a seccomp filter (airlock's whole
 *            floor)
 *
 * FLOOR_ONLY=VARIANT runs that variant alone (for `perf stat`).
 * FLOOR_CHECK=1 runs each variant once with a command that shows its
 * layers (seccomp, bounding set, no_new_privs, uid map, root, Landlock)
 * instead of measuring.
 *
 * Prints, per variant, the median and p90 wall clock per run and the CPU
 * per run (user + system of this process and its reaped children; work
 * the kernel defers to its own threads, such as a network namespace's
 * teardown, is not in it). */
#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "floor_layers.h"

enum { BARE, NS, NS_NONET, BWRAP, AL_NS, AL_CG, AL_MOUNTS, AL_CREDS, AL_LSM,
       AL_AHEAD, NVAR };
static const char *const names[NVAR] = {
	"bare",	 "ns",	    "ns-nonet", "bwrap", "al-ns",
	"+cgroups", "+mounts", "+creds",   "+lsm",  "+lsm, netns ahead"};

/* The command FLOOR_CHECK runs: each layer leaves a trace in it.  The
 * write to /proc/self/comm is allowed by the file's mode, so only
 * Landlock refuses it. */
static char *check_cmd[] = {
	"/bin/sh", "-c",
	"grep -E 'Seccomp|CapBnd|NoNewPrivs' /proc/self/status; "
	"echo \"uid_map: $(cat /proc/self/uid_map)\"; echo \"/: \"$(ls /); "
	"if (echo x >/proc/self/comm) 2>/dev/null; then "
	"echo 'write /proc/self/comm: allowed'; "
	"else echo 'write /proc/self/comm: refused'; fi",
	NULL};

/* Set by SIGINT/SIGTERM/SIGHUP: the run under way finishes and cleans up
 * its cgroups, then the table of what was measured is printed. */
static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static const char *const bwrap_args[] = {
	"/usr/bin/bwrap", "--unshare-all", "--die-with-parent",
	"--new-session", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin",
	"/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64",
	"/lib64", "--symlink", "usr/sbin", "/sbin", "--proc", "/proc", "--dev",
	"/dev", "--tmpfs", "/tmp", "--chdir", "/tmp", NULL};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t cpu_ns(void)
{
	struct rusage s, c;
	getrusage(RUSAGE_SELF, &s);
	getrusage(RUSAGE_CHILDREN, &c);
	int64_t us = (int64_t)(s.ru_utime.tv_sec + s.ru_stime.tv_sec +
			       c.ru_utime.tv_sec + c.ru_stime.tv_sec) *
			     1000000 +
		     s.ru_utime.tv_usec + s.ru_stime.tv_usec +
		     c.ru_utime.tv_usec + c.ru_stime.tv_usec;
	return us * 1000;
}

/* One run: 0 when the child exited 0. */
static int run_once(uint64_t flags, char *const argv[])
{
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	ca.flags = flags;
	ca.exit_signal = SIGCHLD;
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	int st = 0;
	if (waitpid((pid_t)pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -ECHILD;
}

/* One run of variant V. */
static int run_variant(int v, char *const cmd[], char *const bw[],
		       int netns_fd, bool verbose)
{
	const uint64_t all = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS |
			     CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
	switch (v) {
	case BARE:
		return run_once(0, cmd);
	case NS:
		return run_once(all | CLONE_NEWNET, cmd);
	case NS_NONET:
		return run_once(all, cmd);
	case BWRAP:
		return run_once(0, bw);
	case AL_AHEAD:
		return fl_run_joining(FL_LSM, netns_fd, cmd, verbose);
	default:
		return fl_run((enum fl_level)(FL_NS + (v - AL_NS)), cmd,
			      verbose);
	}
}

/* FLOOR_CHECK: each variant once, its output shown; 1 if any failed. */
static int check(const char *only, bool have_bwrap, char **bw_prefix,
		 size_t nb)
{
	int bad = 0;
	for (size_t i = 0; i < 3; i++)
		bw_prefix[nb + i] = check_cmd[i];
	bw_prefix[nb + 3] = NULL;
	for (int v = 0; v < NVAR; v++) {
		if ((v == BWRAP && !have_bwrap) ||
		    (only != NULL && strcmp(only, names[v]) != 0))
			continue;
		printf("## %s\n", names[v]);
		fflush(stdout);
		int nfd = v == AL_AHEAD ? fl_netns_make() : -1;
		int rc = v == AL_AHEAD && nfd < 0
				 ? nfd
				 : run_variant(v, check_cmd, bw_prefix, nfd,
					       true);
		if (nfd >= 0)
			close(nfd);
		fflush(stdout);
		printf("exit: %s\n\n", rc == 0 ? "0" : "FAILED");
		bad |= rc != 0;
	}
	return bad;
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	if (argc < 3 || atoi(argv[1]) < 1) {
		fprintf(stderr, "usage: floor ROUNDS CMD [ARG...]\n");
		return 2;
	}
	int rounds = atoi(argv[1]);
	char **cmd = argv + 2;
	int ncmd = argc - 2;
	size_t nb = sizeof(bwrap_args) / sizeof(bwrap_args[0]) - 1;
	/* room for CMD or for the check command after bwrap's arguments */
	char **bw = calloc(nb + (size_t)ncmd + 4, sizeof(char *));
	int64_t *wall = calloc((size_t)NVAR * (size_t)rounds, sizeof(int64_t));
	int64_t cpu[NVAR] = {0};
	int n[NVAR] = {0}, failed[NVAR] = {0};
	if (!bw || !wall) {
		free(bw);
		free(wall);
		return 1;
	}
	for (size_t i = 0; i < nb; i++)
		bw[i] = (char *)bwrap_args[i];
	for (int i = 0; i < ncmd; i++)
		bw[nb + (size_t)i] = cmd[i];
	bool have_bwrap = access(bwrap_args[0], X_OK) == 0;
	const char *only = getenv("FLOOR_ONLY");
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	fl_prepare(); /* what fails shows as failed runs of its variants */
	if (getenv("FLOOR_CHECK") != NULL) {
		int bad = check(only, have_bwrap, bw, nb);
		fl_release();
		free(bw);
		free(wall);
		return bad;
	}

	for (int r = 0; r < rounds + 3 && !stop; r++) {
		for (int k = 0; k < NVAR && !stop; k++) {
			int v = (k + r) % NVAR; /* the first rotates */
			if ((v == BWRAP && !have_bwrap) ||
			    (only != NULL && strcmp(only, names[v]) != 0))
				continue;
			/* made before the clock starts, as airlock makes it
			 * ahead of the run */
			int nfd = v == AL_AHEAD ? fl_netns_make() : -1;
			int64_t c0 = cpu_ns(), t0 = now_ns();
			int rc = v == AL_AHEAD && nfd < 0
					 ? nfd
					 : run_variant(v, cmd, bw, nfd, false);
			int64_t t1 = now_ns(), c1 = cpu_ns();
			if (nfd >= 0)
				close(nfd);
			if (r < 3) /* warm-up */
				continue;
			if (rc < 0) {
				failed[v]++;
				continue;
			}
			wall[v * rounds + n[v]++] = t1 - t0;
			cpu[v] += c1 - c0;
		}
	}
	printf("| variant | n | median ms | p90 ms | CPU ms per run | failed "
	       "|\n|---|---|---|---|---|---|\n");
	for (int v = 0; v < NVAR; v++) {
		if (n[v] == 0) {
			printf("| %s | 0 | — | — | — | %d |\n", names[v],
			       failed[v]);
			continue;
		}
		int64_t *w = wall + v * rounds;
		qsort(w, (size_t)n[v], sizeof(int64_t), cmp64);
		int mid = n[v] / 2, p90 = (n[v] * 9 + 9) / 10 - 1;
		printf("| %s | %d | %.2f | %.2f | %.2f | %d |\n", names[v],
		       n[v], (double)w[mid] / 1e6, (double)w[p90] / 1e6,
		       (double)cpu[v] / n[v] / 1e6, failed[v]);
	}
	fl_release();
	free(bw);
	free(wall);
	return 0;
}
