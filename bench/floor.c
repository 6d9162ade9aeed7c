/* The kernel's floor under a sandboxed run on this machine: what `clone3`
 * into new namespaces, `execve` and `wait` cost alone, with no mounts, no
 * cgroups, no seccomp, no Landlock and no bookkeeping.  Interleaved run by
 * run with bubblewrap on the same command, it says how much of airlock's
 * per-run cost is physical (bench/README.md, "The floor").
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
 *
 * FLOOR_ONLY=VARIANT runs that variant alone (for `perf stat`).
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

enum { BARE, NS, NS_NONET, BWRAP, NVAR };
static const char *const names[NVAR] = {"bare", "ns", "ns-nonet", "bwrap"};

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
	char **bw = calloc(nb + (size_t)ncmd + 1, sizeof(char *));
	int64_t *wall = calloc((size_t)NVAR * (size_t)rounds, sizeof(int64_t));
	int64_t cpu[NVAR] = {0};
	int n[NVAR] = {0}, failed[NVAR] = {0};
	if (!bw || !wall)
		return 1;
	for (size_t i = 0; i < nb; i++)
		bw[i] = (char *)bwrap_args[i];
	for (int i = 0; i < ncmd; i++)
		bw[nb + (size_t)i] = cmd[i];
	bool have_bwrap = access(bwrap_args[0], X_OK) == 0;
	const char *only = getenv("FLOOR_ONLY");
	const uint64_t all = CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS |
			     CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;

	for (int r = 0; r < rounds + 3; r++) {
		for (int k = 0; k < NVAR; k++) {
			int v = (k + r) % NVAR; /* the first rotates */
			if ((v == BWRAP && !have_bwrap) ||
			    (only != NULL && strcmp(only, names[v]) != 0))
				continue;
			uint64_t flags = v == NS ? all | CLONE_NEWNET
				       : v == NS_NONET ? all
						       : 0;
			char **av = v == BWRAP ? bw : cmd;
			int64_t c0 = cpu_ns(), t0 = now_ns();
			int rc = run_once(flags, av);
			int64_t t1 = now_ns(), c1 = cpu_ns();
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
		int p90 = (n[v] * 9 + 9) / 10 - 1;
		printf("| %s | %d | %.2f | %.2f | %.2f | %d |\n", names[v],
		       n[v], (double)w[n[v] / 2] / 1e6, (double)w[p90] / 1e6,
		       (double)cpu[v] / n[v] / 1e6, failed[v]);
	}
	free(bw);
	free(wall);
	return 0;
}
