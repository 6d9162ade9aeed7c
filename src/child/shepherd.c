/* The shepherd: owns one program's process tree (see shepherd.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child/shepherd.h"
#include "core/util.h"

#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

void al_close_fds_from(int lowfd, const int *keep, size_t n_keep)
{
	/* Close the gaps between kept fds; close_range is one syscall per gap
	 * and needs no /proc. */
	int lo = lowfd;
	for (;;) {
		int next_keep = -1;
		for (size_t i = 0; i < n_keep; i++)
			if (keep[i] >= lo && (next_keep < 0 || keep[i] < next_keep))
				next_keep = keep[i];
		unsigned hi = next_keep < 0 ? ~0U : (unsigned)next_keep - 1;
		if (next_keep < 0 || next_keep > lo) {
			if (syscall(SYS_close_range, (unsigned)lo, hi, 0) < 0) {
				/* Old kernel: fall back to a bounded loop. */
				int max = next_keep < 0 ? 65536 : next_keep;
				for (int fd = lo; fd < max; fd++)
					close(fd);
			}
		}
		if (next_keep < 0)
			return;
		lo = next_keep + 1;
	}
}

/* The shepherd is a forked copy of a possibly multi-threaded host, so it
 * must not allocate (another thread may have held an allocator lock at
 * fork time — ASan's allocator, for one, is not fork-safe): the tree walk
 * uses raw syscalls and fixed buffers only. */
#define TREE_MAX 8192
static pid_t tree_pids[TREE_MAX];

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static size_t format_path(char *buf, size_t len, int pid, const char *mid,
			  const char *tail)
{
	int n = snprintf(buf, len, "/proc/%d/%s%s", pid, mid, tail);
	return n < 0 || (size_t)n >= len ? 0 : (size_t)n;
}

/* Appends the pids listed in one children file; returns the new count. */
static size_t read_children(const char *path, pid_t *out, size_t cap, size_t n)
{
	char buf[4096];
	if (al_read_head(path, buf, sizeof(buf)) < 0)
		return n;
	for (char *p = buf; *p != '\0' && n < cap;) {
		while (*p == ' ' || *p == '\n')
			p++;
		if (*p < '0' || *p > '9')
			break;
		long v = 0;
		while (*p >= '0' && *p <= '9')
			v = v * 10 + (*p++ - '0');
		out[n++] = (pid_t)v;
	}
	return n;
}

/* Every descendant of `root` (not root itself), breadth first, by reading
 * the children lists /proc keeps per thread. */
static size_t collect_descendants(pid_t root, pid_t *out, size_t cap)
{
	size_t n = 0;
	pid_t current = root;
	for (size_t next = 0;; current = out[next++]) {
		char path[64];
		if (format_path(path, sizeof(path), (int)current, "task", "") == 0)
			goto advance;
		int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0)
			goto advance;
		char dbuf[2048];
		long got;
		while ((got = syscall(SYS_getdents64, dfd, dbuf, sizeof(dbuf))) > 0) {
			for (long off = 0; off < got;) {
				struct linux_dirent64 *de = (void *)(dbuf + off);
				off += de->d_reclen;
				if (de->d_name[0] == '.')
					continue;
				char cpath[96];
				int w = snprintf(cpath, sizeof(cpath),
						 "/proc/%d/task/%.16s/children",
						 (int)current, de->d_name);
				if (w > 0 && (size_t)w < sizeof(cpath))
					n = read_children(cpath, out, cap, n);
			}
		}
		close(dfd);
advance:
		if (next >= n)
			break;
	}
	return n;
}

static void signal_descendants(int sig, bool as_init)
{
	if (as_init) {
		/* pid 1 of a namespace: -1 reaches every other process in it. */
		kill(-1, sig);
		return;
	}
	size_t n = collect_descendants(getpid(), tree_pids, TREE_MAX);
	for (size_t i = 0; i < n; i++)
		kill(tree_pids[i], sig);
}

/* Reaps every child that has ended; records the program's status. */
static void reap(pid_t program, int *program_status, bool *program_done)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG | __WALL);
		if (pid <= 0)
			return;
		if (pid == program) {
			*program_status = status;
			*program_done = true;
		}
	}
}

/* Kills everything below us until nothing is left (a process may fork
 * while being killed, so repeat until waitpid says there are no
 * children). */
static void kill_tree_until_empty(bool as_init, pid_t program,
				  int *program_status, bool *program_done)
{
	for (int round = 0; round < 1000; round++) {
		signal_descendants(SIGKILL, as_init);
		int status;
		pid_t pid = waitpid(-1, &status, __WALL);
		if (pid < 0 && errno == ECHILD)
			return;
		if (pid == program) {
			*program_status = status;
			*program_done = true;
		}
		reap(program, program_status, program_done);
	}
}

size_t al_child_rlimits(const al_limits *l, al_rlimit_spec *out)
{
	size_t n = 0;
	out[n++] = (al_rlimit_spec){RLIMIT_CORE, 0};
	out[n++] = (al_rlimit_spec){RLIMIT_NOFILE, (rlim_t)l->open_files};
	if (l->file_bytes > 0)
		out[n++] = (al_rlimit_spec){RLIMIT_FSIZE, (rlim_t)l->file_bytes};
	if (l->cpu_ms > 0)
		out[n++] = (al_rlimit_spec){RLIMIT_CPU,
					    (rlim_t)((l->cpu_ms + 999) / 1000)};
	if (l->stack_bytes > 0)
		out[n++] = (al_rlimit_spec){RLIMIT_STACK,
					    (rlim_t)l->stack_bytes};
	return n;
}

void al_shepherd_block_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1);
	sigprocmask(SIG_BLOCK, set, NULL);
}

int al_shepherd_loop(pid_t program, int status_fd, bool as_init)
{
	sigset_t set;
	al_shepherd_block_signals(&set);

	int program_status = 0;
	bool program_done = false;
	bool killing = false;

	reap(program, &program_status, &program_done);
	while (!program_done) {
		siginfo_t info;
		int sig = sigwaitinfo(&set, &info);
		if (sig < 0)
			continue;
		switch (sig) {
		case SIGCHLD:
			reap(program, &program_status, &program_done);
			break;
		case SIGTERM:
		case SIGINT:
		case SIGHUP:
			if (!killing)
				signal_descendants(SIGTERM, as_init);
			break;
		case SIGUSR1:
			killing = true;
			kill_tree_until_empty(as_init, program, &program_status,
					      &program_done);
			break;
		default:
			break;
		}
	}
	/* Nothing the program started outlives it. */
	kill_tree_until_empty(as_init, program, &program_status, &program_done);

	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	al_exit_report rep = {
		.magic = AL_EXIT_REPORT_MAGIC,
		.wait_status = program_status,
		.cpu_user_us = (uint64_t)ru.ru_utime.tv_sec * 1000000u +
			       (uint64_t)ru.ru_utime.tv_usec,
		.cpu_sys_us = (uint64_t)ru.ru_stime.tv_sec * 1000000u +
			      (uint64_t)ru.ru_stime.tv_usec,
		.max_rss_bytes = (uint64_t)ru.ru_maxrss * 1024u,
	};
	ssize_t w;
	do
		w = write(status_fd, &rep, sizeof(rep));
	while (w < 0 && errno == EINTR);
	return w == (ssize_t)sizeof(rep) ? 0 : 1;
}

struct shepherd_ctx {
	pid_t pid;
};

/* TERM is forwarded by the shepherd; KILL is asked of it with SIGUSR1 so
 * it can sweep the tree before it goes.  The shepherd is our child and is
 * reaped only after supervision ends, so its pid cannot be reused here. */
static int shepherd_signal_tree(void *ctx, int sig)
{
	const struct shepherd_ctx *c = ctx;
	return kill(c->pid, sig == SIGKILL ? SIGUSR1 : sig) < 0 ? -errno : 0;
}

static void write_errno_and_exit(int fd, int code)
{
	int e = errno;
	if (write(fd, &e, sizeof(e)) < 0)
		_exit(code);
	_exit(code);
}

static void close_pair(int p[2])
{
	if (p[0] >= 0)
		close(p[0]);
	if (p[1] >= 0)
		close(p[1]);
	p[0] = p[1] = -1;
}

/* In the program's process: wire the pipes, drop everything inherited,
 * apply limits and exec.  Never returns. */
static void exec_program(const al_spawn_spec *spec, int in_fd, int out_fd,
			 int err_fd, int errpipe)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);

	if (setsid() < 0)
		write_errno_and_exit(errpipe, 127);
	if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0)
		write_errno_and_exit(errpipe, 127);
	int keep = errpipe;
	al_close_fds_from(3, &keep, 1);
	if (spec->cwd != NULL && chdir(spec->cwd) < 0)
		write_errno_and_exit(errpipe, 127);
	for (size_t i = 0; i < spec->n_rlimits; i++) {
		struct rlimit rl = {spec->rlimits[i].value, spec->rlimits[i].value};
		/* One second of headroom so the soft limit's SIGXCPU, which
		 * names the cause, arrives before the hard limit's SIGKILL. */
		if (spec->rlimits[i].resource == RLIMIT_CPU)
			rl.rlim_max = rl.rlim_cur + 1;
		if (setrlimit(spec->rlimits[i].resource, &rl) < 0)
			write_errno_and_exit(errpipe, 127);
	}
	execve(spec->argv[0], spec->argv, spec->envp);
	write_errno_and_exit(errpipe, 127);
}

int al_shepherd_spawn(const al_spawn_spec *spec, al_child *child, al_error **err)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
	int status[2] = {-1, -1}, execerr[2] = {-1, -1};
	int rc = 0;
	struct shepherd_ctx *ctx = NULL;

	memset(child, 0, sizeof(*child));
	child->pid = -1;
	child->pidfd = child->stdin_fd = child->stdout_fd = -1;
	child->stderr_fd = child->status_fd = -1;

	bool piped = spec->stdin_pipe && !spec->stdin_external;
	if ((piped ? pipe2(in, O_CLOEXEC) : 0) < 0 ||
	    pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(status, O_CLOEXEC) < 0 || pipe2(execerr, O_CLOEXEC) < 0) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, errno, "start_failed",
				  "cannot create pipes");
		goto out;
	}
	if (!piped) {
		in[0] = spec->stdin_external
				? fcntl(spec->stdin_src, F_DUPFD_CLOEXEC, 3)
				: open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (in[0] < 0) {
			rc = al_error_set(err, AL_ERR_UNAVAILABLE, errno,
					  "start_failed", "cannot open /dev/null");
			goto out;
		}
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, errno, "start_failed",
				  "cannot fork");
		goto out;
	}
	if (pid == 0) {
		/* The shepherd. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		setsid();
		sigset_t set;
		al_shepherd_block_signals(&set);
		pid_t program = fork();
		if (program < 0)
			write_errno_and_exit(execerr[1], 127);
		if (program == 0)
			exec_program(spec, in[0], out[1], errp[1], execerr[1]);
		int keep = status[1];
		al_close_fds_from(3, &keep, 1);
		_exit(al_shepherd_loop(program, status[1], false));
	}

	child->pid = pid;
	/* Optional: the status pipe's EOF also says the shepherd is gone
	 * (valgrind, for one, does not know pidfd_open). */
	child->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	/* Close our copies of the child's ends, then learn whether exec
	 * worked: the error pipe closes on a successful exec. */
	close(execerr[1]);
	execerr[1] = -1;
	close(in[0]);
	in[0] = -1;
	close(out[1]);
	out[1] = -1;
	close(errp[1]);
	errp[1] = -1;
	close(status[1]);
	status[1] = -1;

	int exec_errno = 0;
	ssize_t n;
	do
		n = read(execerr[0], &exec_errno, sizeof(exec_errno));
	while (n < 0 && errno == EINTR);

	/* Allocated after the fork so the shepherd owns no heap block. */
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, __WALL);
		child->pid = -1;
		rc = -ENOMEM;
		goto out;
	}
	ctx->pid = pid;
	child->stdin_fd = in[1];
	child->stdout_fd = out[0];
	child->stderr_fd = errp[0];
	child->status_fd = status[0];
	child->signal_tree = shepherd_signal_tree;
	child->signal_ctx = ctx;
	in[1] = out[0] = errp[0] = status[0] = -1;
	ctx = NULL;

	if (n == (ssize_t)sizeof(exec_errno)) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, exec_errno,
				  exec_errno == ENOEXEC ? "exec_format"
							: "start_failed",
				  "cannot start the interpreter: %s",
				  strerror(exec_errno));
	}
	if (rc < 0)
		al_child_discard(child);
out:
	close_pair(in);
	close_pair(out);
	close_pair(errp);
	close_pair(status);
	close_pair(execerr);
	free(ctx);
	return rc;
}

void al_child_discard(al_child *child)
{
	int fds[] = {child->stdin_fd, child->stdout_fd, child->stderr_fd,
		     child->status_fd};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	child->stdin_fd = child->stdout_fd = child->stderr_fd = -1;
	child->status_fd = -1;
	if (child->pid > 0) {
		kill(child->pid, SIGUSR1);
		waitpid(child->pid, NULL, __WALL);
		child->pid = -1;
	}
	if (child->pidfd >= 0)
		close(child->pidfd);
	child->pidfd = -1;
	free(child->signal_ctx);
	child->signal_ctx = NULL;
}
