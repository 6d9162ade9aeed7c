/* Runs a probe command with a deadline; see probe_run.h. */
#include "lang/probe_run.h"
#include "core/util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Reads the pipe until EOF or the deadline.  Returns 0 at EOF. */
static int drain(int fd, long long deadline, size_t max_out, char **buf,
		 size_t *len, size_t *cap)
{
	for (;;) {
		long long left = deadline - al_mono_ms();
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)left);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ETIMEDOUT;
		if (*cap - *len < 4096) {
			size_t ncap = *cap ? *cap * 2 : 16384;
			char *nb = realloc(*buf, ncap + 1);

			if (!nb)
				return -ENOMEM;
			*buf = nb;
			*cap = ncap;
		}
		ssize_t r = read(fd, *buf + *len, *cap - *len);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (r == 0)
			return 0;
		*len += (size_t)r;
		if (*len > max_out)
			return -EFBIG;
	}
}

/* Waits for pid to exit, killing its group at the deadline, then kills
 * whatever is left in the group (a shim's helper) before reaping: while
 * the leader is an unreaped zombie its id, and so the group id, cannot be
 * reused by a process we did not start. */
static int wait_exit(pid_t pid, long long deadline, int *status)
{
	int timed_out = 0;

	for (;;) {
		siginfo_t si;
		int flags = WEXITED | WNOWAIT | (timed_out ? 0 : WNOHANG);

		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)pid, &si, flags) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (si.si_pid == pid)
			break;
		if (al_mono_ms() >= deadline) {
			kill(-pid, SIGKILL);
			timed_out = 1;
			continue;
		}
		struct timespec ts = { 0, 2 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	kill(-pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return timed_out ? -ETIMEDOUT : 0;
}

int al_probe_run(char *const argv[], char *const envp[], int timeout_ms,
		 size_t max_out, char **out, int *exit_status)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	int pipefd[2] = { -1, -1 };
	char *buf = NULL;
	size_t len = 0, cap = 0;
	long long deadline = al_mono_ms() + timeout_ms;
	pid_t pid;
	int status = 0, rc, fa_ok = 0, attr_ok = 0;

	*out = NULL;
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	rc = -posix_spawn_file_actions_init(&fa);
	if (rc)
		goto out;
	fa_ok = 1;
	rc = -posix_spawnattr_init(&attr);
	if (rc)
		goto out;
	attr_ok = 1;
	/* The pipe is O_CLOEXEC; dup2 onto 1 clears the flag on the copy.
	 * Every other descriptor of ours is expected to be CLOEXEC too. */
	rc = -posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (!rc)
		rc = -posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
	if (!rc)
		rc = -posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (!rc)
		rc = -posix_spawn_file_actions_addchdir_np(&fa, "/");
	if (!rc)
		rc = -posix_spawnattr_setpgroup(&attr, 0);
	if (!rc)
		rc = -posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP |
							     POSIX_SPAWN_SETSIGMASK |
							     POSIX_SPAWN_SETSIGDEF);
	if (!rc) {
		sigset_t none, all;

		sigemptyset(&none);
		sigfillset(&all);
		rc = -posix_spawnattr_setsigmask(&attr, &none);
		if (!rc)
			rc = -posix_spawnattr_setsigdefault(&attr, &all);
	}
	if (rc)
		goto out;
	rc = -posix_spawn(&pid, argv[0], &fa, &attr, argv, envp);
	if (rc)
		goto out;
	close(pipefd[1]);
	pipefd[1] = -1;
	rc = drain(pipefd[0], deadline, max_out, &buf, &len, &cap);
	{
		/* On a read failure stop it at once. */
		int r2 = wait_exit(pid, rc ? 0 : deadline, &status);

		if (!rc)
			rc = r2;
	}
	if (rc)
		goto out;
	if (!buf) {
		buf = malloc(1);
		if (!buf) {
			rc = -ENOMEM;
			goto out;
		}
	}
	buf[len] = '\0';
	*out = buf;
	buf = NULL;
	*exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
out:
	if (attr_ok)
		posix_spawnattr_destroy(&attr);
	if (fa_ok)
		posix_spawn_file_actions_destroy(&fa);
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	free(buf);
	return rc;
}
