/* A run's cgroups that would not go away (see cgroup.h, "Removal"):
 * waiting until they are verifiably empty, the dirs handed over when even
 * that did not do, and the sweep that removes empty leftovers of
 * creators that are gone. */
#include "cgroup/cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgfs.h"
#include "cgroup/sweep.h"

/* How often, while waiting, the run's cgroups are killed again: a
 * process forked while the previous kill went through its list. */
#define SETTLE_REKILL_MS 100
/* Without the unified hierarchy's cgroup.events (nothing to poll) the
 * cgroups are read again this often. */
#define SETTLE_POLL_MS 5
/* Dirs handed over and not yet removed, per process: a bound on memory
 * only; what does not fit is left to a later process's sweep. */
#define PENDING_MAX 64
/* A leftover is swept only when it is older than this: between its mkdir
 * and the first process joining, a live run's cgroup is empty for a
 * moment (longer while large inputs are copied in), and its creator may
 * live in a pid namespace where we cannot see it. */
#define SWEEP_MIN_AGE_S 60
/* How often a long-lived process sweeps again. */
#define SWEEP_EVERY_S 60

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* The unified cgroup's "populated" (1, 0), or -1 when it cannot be told.
 * Reading from the start again re-arms the fd's POLLPRI. */
static int events_populated(int fd)
{
	char buf[256];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	const char *p = strstr(buf, "populated ");
	return p == NULL ? -1 : p[10] == '1';
}

bool al_sb_cgrun_settle(const al_sb_cgrun *run, int timeout_ms)
{
	long deadline = now_ms() + timeout_ms;
	long next_kill = 0;
	int efd = -1;
	char path[PATH_MAX];
	if (run->v2_dir != NULL &&
	    snprintf(path, sizeof(path), "%s/cgroup.events", run->v2_dir) <
		    (int)sizeof(path))
		efd = open(path, O_RDONLY | O_CLOEXEC);
	bool empty;
	for (;;) {
		/* The unified cgroup holds the whole tree (its processes are
		 * placed there at clone): its populated flag changing is an
		 * event to wait on.  The v1 cgroups are still read: only
		 * their cgroup.procs tells that they are empty. */
		int pop = efd >= 0 ? events_populated(efd) : -1;
		empty = pop != 1 && al_sb_cgrun_empty(run);
		long now = now_ms();
		if (empty || now >= deadline)
			break;
		if (now >= next_kill) {
			al_sb_cgrun_kill(run);
			next_kill = now + SETTLE_REKILL_MS;
		}
		long wait = next_kill - now;
		if (deadline - now < wait)
			wait = deadline - now;
		if (pop == 1) {
			struct pollfd p = {efd, POLLPRI, 0};
			poll(&p, 1, (int)wait);
		} else {
			sleep_ms(wait < SETTLE_POLL_MS ? wait : SETTLE_POLL_MS);
		}
	}
	if (efd >= 0)
		close(efd);
	return empty;
}

/* ---- dirs handed over ------------------------------------------- */

static pthread_mutex_t pending_mu = PTHREAD_MUTEX_INITIALIZER;
static char *pending[PENDING_MAX];
static long last_sweep_ms = -1;

void al_cg_sweep_defer(const char *dir)
{
	char *copy = strdup(dir);
	if (copy == NULL)
		return; /* a later process's sweep removes it */
	pthread_mutex_lock(&pending_mu);
	for (int i = 0; i < PENDING_MAX; i++)
		if (pending[i] == NULL) {
			pending[i] = copy;
			copy = NULL;
			break;
		}
	pthread_mutex_unlock(&pending_mu);
	free(copy);
}

/* One rmdir each, no waiting: the run they belonged to is over. */
static void retry_pending(void)
{
	for (int i = 0; i < PENDING_MAX; i++) {
		if (pending[i] == NULL)
			continue;
		if (rmdir(pending[i]) == 0 || errno == ENOENT) {
			free(pending[i]);
			pending[i] = NULL;
		}
	}
}

/* The creator's pid in a name of ours, "airlock-PID-..." (a run's) or
 * "airlock-probe-PID-..." (a discovery trial's); 0 for any other name
 * (a durable run's "airlock-run-...", which its daemon owns, included). */
static pid_t creator_of(const char *name)
{
	const char *p = name;
	if (strncmp(p, "airlock-", 8) != 0)
		return 0;
	p += 8;
	if (strncmp(p, "probe-", 6) == 0)
		p += 6;
	if (*p < '0' || *p > '9')
		return 0;
	char *end;
	errno = 0;
	long pid = strtol(p, &end, 10);
	if (*end != '-' || errno != 0 || pid <= 0 || pid > INT_MAX)
		return 0;
	return (pid_t)pid;
}

static bool creator_gone(pid_t pid)
{
	return pid != getpid() && kill(pid, 0) < 0 && errno == ESRCH;
}

/* rmdir is the emptiness check: the kernel refuses (EBUSY) a cgroup that
 * holds a process or a child cgroup, so nothing alive is ever touched. */
static int sweep_dir(const char *base)
{
	DIR *d = opendir(base);
	if (d == NULL)
		return 0;
	int removed = 0;
	time_t now = time(NULL);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR)
			continue;
		pid_t pid = creator_of(de->d_name);
		struct stat st;
		if (pid == 0 ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    now - st.st_mtime < SWEEP_MIN_AGE_S || !creator_gone(pid))
			continue;
		if (unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}

/* The hierarchy's base a run dir was made in: its parent. */
static int sweep_parent_of(const char *dir)
{
	const char *slash = dir != NULL ? strrchr(dir, '/') : NULL;
	char base[PATH_MAX];
	if (slash == NULL || slash == dir ||
	    snprintf(base, sizeof(base), "%.*s", (int)(slash - dir), dir) >=
		    (int)sizeof(base))
		return 0;
	return sweep_dir(base);
}

int al_cg_sweep_after(const al_sb_cgrun *run)
{
	int removed = 0;
	pthread_mutex_lock(&pending_mu);
	retry_pending();
	long now = now_ms();
	bool due = last_sweep_ms < 0 ||
		   now - last_sweep_ms >= SWEEP_EVERY_S * 1000L;
	if (due)
		last_sweep_ms = now;
	pthread_mutex_unlock(&pending_mu);
	if (!due)
		return 0;
	removed += sweep_parent_of(run->v2_dir);
	for (int i = 0; i < AL_CG__N; i++) {
		bool seen = false; /* co-mounted controllers share a base */
		for (int j = 0; j < i; j++)
			if (run->v1_dir[j] != NULL && run->v1_dir[i] != NULL &&
			    strcmp(run->v1_dir[j], run->v1_dir[i]) == 0)
				seen = true;
		if (!seen)
			removed += sweep_parent_of(run->v1_dir[i]);
	}
	return removed;
}
