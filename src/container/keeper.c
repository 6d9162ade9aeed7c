/* The keeper: the process between the provider and one container.
 *
 * It makes the container's network namespace (fresh; loopback up only
 * when granted), starts the runtime detached with the program's stdio on
 * pipes, and — a child subreaper — becomes the parent of the container's
 * first process when the runtime exits, so it sees that process's own
 * wait status (a foreground runtime reports 128+N for a signal, which a
 * program can also exit with).  Like the shepherd it forwards SIGTERM to
 * everything below it, kills everything on SIGUSR1 and when the program
 * ends, and then writes the exit report.  A runtime that could not start
 * the container is told on the note pipe. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "container/container.h"
#include "child/shepherd.h"
#include "sandbox/netns.h"

#define TREE_MAX 4096
static pid_t tree[TREE_MAX];

/* Appends the children listed in path (space-separated pids). */
static size_t read_children(const char *path, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return n;
	char buf[4096];
	ssize_t got = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (got <= 0)
		return n;
	buf[got] = '\0';
	for (char *p = buf; *p && n < TREE_MAX;) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p)
			break;
		tree[n++] = (pid_t)v;
		p = end;
		while (*p == ' ' || *p == '\n')
			p++;
	}
	return n;
}

/* Every descendant, breadth first, from each thread's children list. */
static size_t descendants(void)
{
	size_t n = 0;
	pid_t cur = getpid();
	for (size_t next = 0;; cur = tree[next++]) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/task", (int)cur);
		{
			char tpath[96];
			/* the main thread covers single-threaded processes;
			 * the runtimes are threaded, so every task is read */
			int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dfd >= 0) {
				char dbuf[2048];
				long got;
				while ((got = syscall(SYS_getdents64, dfd, dbuf,
						      sizeof(dbuf))) > 0)
					for (long off = 0; off < got;) {
						struct {
							unsigned long long ino;
							long long off;
							unsigned short reclen;
							unsigned char type;
							char name[];
						} *de = (void *)(dbuf + off);
						off += de->reclen;
						if (de->name[0] == '.')
							continue;
						snprintf(tpath, sizeof(tpath),
							 "/proc/%d/task/%.16s/children",
							 (int)cur, de->name);
						n = read_children(tpath, n);
					}
				close(dfd);
			}
		}
		if (next >= n)
			break;
	}
	return n;
}

static void signal_all(int sig)
{
	size_t n = descendants();
	for (size_t i = 0; i < n; i++)
		kill(tree[i], sig);
}

typedef struct kstate {
	pid_t runtime, program;
	int rt_status, prog_status;
	bool rt_done, prog_done;
	const char *pid_file;
	/* children reaped before the program's pid was known */
	pid_t early_pid[32];
	int early_status[32];
	size_t n_early;
} kstate;

static void program_known(kstate *s)
{
	char buf[32] = "";
	int fd = open(s->pid_file, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	s->program = (pid_t)atoi(buf);
	for (size_t i = 0; i < s->n_early; i++)
		if (s->early_pid[i] == s->program) {
			s->prog_status = s->early_status[i];
			s->prog_done = true;
		}
}

static void reaped(kstate *s, pid_t pid, int status)
{
	if (pid == s->runtime) {
		s->rt_done = true;
		s->rt_status = status;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			program_known(s);
	} else if (s->program > 0 && pid == s->program) {
		s->prog_status = status;
		s->prog_done = true;
	} else if (s->program <= 0 && s->n_early < 32) {
		s->early_pid[s->n_early] = pid;
		s->early_status[s->n_early++] = status;
	}
}

static void reap(kstate *s)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG | __WALL);
		if (pid <= 0)
			return;
		reaped(s, pid, status);
	}
}

static void kill_until_empty(kstate *s)
{
	for (int round = 0; round < 1000; round++) {
		signal_all(SIGKILL);
		int status;
		pid_t pid = waitpid(-1, &status, __WALL);
		if (pid < 0 && errno == ECHILD)
			return;
		if (pid > 0)
			reaped(s, pid, status);
		reap(s);
	}
}

static bool failed_start(const kstate *s)
{
	return s->rt_done && !(WIFEXITED(s->rt_status) &&
			       WEXITSTATUS(s->rt_status) == 0);
}

/* The init's report (airlock-init): from the pipe, or the file. */
static bool read_report(const al_ct_launch *l, int rep_r, al_exit_report *rep)
{
	int fd = rep_r;
	if (fd < 0 && l->report_file != NULL)
		fd = open(l->report_file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
						  O_NONBLOCK);
	if (fd < 0)
		return false;
	if (fd == rep_r)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	ssize_t n = read(fd, rep, sizeof(*rep));
	if (fd != rep_r)
		close(fd);
	return n == (ssize_t)sizeof(*rep) && rep->magic == AL_EXIT_REPORT_MAGIC;
}

/* TERM to the container's init through the runtime (airlock-init passes
 * it on to every process); the runtime itself, while it still starts
 * the container, gets it directly. */
static void runtime_term(kstate *s, const al_ct_launch *l)
{
	if (!s->rt_done) {
		kill(s->runtime, SIGTERM);
		return;
	}
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		al_close_fds_from(3, NULL, 0);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execv(l->term_argv[0], l->term_argv);
		_exit(127);
	}
	/* reaped with everything else */
}

static int keeper_loop(kstate *s, const al_ct_launch *l, int rep_r,
		       int status_fd, int note_fd)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	bool killing = false;
	reap(s);
	while (!s->prog_done && !failed_start(s) && !killing) {
		siginfo_t info;
		int sig = sigwaitinfo(&set, &info);
		if (sig == SIGCHLD)
			reap(s);
		else if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)
			runtime_term(s, l);
		else if (sig == SIGUSR1)
			killing = true;
	}
	/* Nothing of the container outlives its first process. */
	kill_until_empty(s);
	if (failed_start(s)) {
		char f = 'F';
		if (write(note_fd, &f, 1) < 0)
			return 1;
	}
	al_exit_report rep;
	/* The init's report says how the program ended; the init itself
	 * always exits (or is killed). */
	if (s->prog_done && read_report(l, rep_r, &rep))
		goto write;
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	rep = (al_exit_report){
		.magic = AL_EXIT_REPORT_MAGIC,
		.wait_status = s->prog_done ? s->prog_status
			       : failed_start(s) ? (AL_CT_START_FAILED << 8)
						 : SIGKILL,
		.cpu_user_us = (uint64_t)ru.ru_utime.tv_sec * 1000000u +
			       (uint64_t)ru.ru_utime.tv_usec,
		.cpu_sys_us = (uint64_t)ru.ru_stime.tv_sec * 1000000u +
			      (uint64_t)ru.ru_stime.tv_usec,
		.max_rss_bytes = (uint64_t)ru.ru_maxrss * 1024u,
	};
write:;
	ssize_t w;
	do
		w = write(status_fd, &rep, sizeof(rep));
	while (w < 0 && errno == EINTR);
	return w == (ssize_t)sizeof(rep) ? 0 : 1;
}

struct keeper_ctx {
	pid_t pid;
};

static int keeper_signal(void *ctx, int sig)
{
	const struct keeper_ctx *c = ctx;
	return kill(c->pid, sig == SIGKILL ? SIGUSR1 : sig) < 0 ? -errno : 0;
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0) {
			close(p[i]);
			p[i] = -1;
		}
}

/* In the keeper; never returns. */
static void keeper_main(const al_ct_launch *l, int in, int out, int errw,
			int status_w, int note_w, int ready_w, int go_r,
			int rep_r, int rep_w)
{
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	setsid();
	char ok = 'R';
	if (unshare(CLONE_NEWNET) < 0 ||
	    (l->loopback && al_sb_loopback_up() < 0))
		ok = 'N';
	if (write(ready_w, &ok, 1) != 1 || ok != 'R')
		_exit(1);
	close(ready_w);
	char go;
	if (read(go_r, &go, 1) != 1)
		_exit(1);
	close(go_r);
	kstate s = {.pid_file = l->pid_file, .program = -1};
	s.runtime = fork();
	if (s.runtime < 0)
		_exit(1);
	if (s.runtime == 0) {
		if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errw, 2) < 0 ||
		    (rep_w >= 0 && dup2(rep_w, 3) < 0))
			_exit(AL_CT_START_FAILED);
		al_close_fds_from(rep_w >= 0 ? 4 : 3, NULL, 0);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execv(l->runtime_argv[0], l->runtime_argv);
		_exit(AL_CT_START_FAILED);
	}
	/* Only the container holds the program's ends from here. */
	close(in);
	close(out);
	close(errw);
	int keep[3] = {status_w, note_w, rep_r};
	al_close_fds_from(3, keep, rep_r >= 0 ? 3 : 2);
	_exit(keeper_loop(&s, l, rep_r, status_w, note_w));
}

int al_ct_keeper_start(const al_ct_launch *l, al_ct_keeper *k, al_error **err)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
	int status[2] = {-1, -1}, note[2] = {-1, -1}, ready[2] = {-1, -1},
	    go[2] = {-1, -1}, rep[2] = {-1, -1};
	int rc = 0;
	memset(k, 0, sizeof(*k));
	k->pid = -1;
	k->go_fd = -1;
	al_child *c = &k->child;
	c->pid = -1;
	c->pidfd = c->stdin_fd = c->stdout_fd = c->stderr_fd = -1;
	c->status_fd = -1;
	struct keeper_ctx *ctx = NULL;
	if ((l->stdin_pipe ? pipe2(in, O_CLOEXEC) : 0) < 0 ||
	    pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(status, O_CLOEXEC) < 0 || pipe2(note, O_CLOEXEC) < 0 ||
	    pipe2(ready, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0 ||
	    (l->report_fd && pipe2(rep, O_CLOEXEC) < 0)) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, errno,
				  "container_start_failed",
				  "cannot create pipes");
		goto out;
	}
	if (!l->stdin_pipe &&
	    (in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, errno,
				  "container_start_failed",
				  "cannot open /dev/null");
		goto out;
	}
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		keeper_main(l, in[0], out[1], errp[1], status[1], note[1],
			    ready[1], go[0], rep[0], rep[1]);
	}
	int fork_errno = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, fork_errno,
				  "container_start_failed", "cannot fork");
		goto out;
	}
	k->pid = pid;
	c->pid = pid;
	c->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	/* allocated after the fork: the keeper owns no heap block */
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, __WALL);
		k->pid = c->pid = -1;
		if (c->pidfd >= 0)
			close(c->pidfd);
		c->pidfd = -1;
		rc = -ENOMEM;
		goto out;
	}
	ctx->pid = pid;
	c->signal_tree = keeper_signal;
	c->signal_ctx = ctx;
	ctx = NULL;
	close(ready[1]);
	ready[1] = -1;
	char ok = 0;
	ssize_t n;
	do
		n = read(ready[0], &ok, 1);
	while (n < 0 && errno == EINTR);
	c->stdin_fd = in[1];
	c->stdout_fd = out[0];
	c->stderr_fd = errp[0];
	c->status_fd = status[0];
	in[1] = out[0] = errp[0] = status[0] = -1;
	k->go_fd = go[1];
	go[1] = -1;
	/* the note's read end rides along as the child's extra fd */
	k->netns[0] = '\0';
	snprintf(k->netns, sizeof(k->netns), "/proc/%d/ns/net", (int)pid);
	k->note_fd = note[0];
	note[0] = -1;
	if (n != 1 || ok != 'R') {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, EPERM,
				  "container_start_failed",
				  "cannot make the container's network "
				  "namespace");
		al_ct_keeper_discard(k);
	}
out:
	close_pair(in);
	close_pair(out);
	close_pair(errp);
	close_pair(status);
	close_pair(note);
	close_pair(ready);
	close_pair(go);
	close_pair(rep);
	free(ctx);
	return rc;
}

int al_ct_keeper_go(al_ct_keeper *k)
{
	char g = 'G';
	ssize_t w = write(k->go_fd, &g, 1);
	close(k->go_fd);
	k->go_fd = -1;
	return w == 1 ? 0 : -EPIPE;
}

bool al_ct_keeper_start_failed(al_ct_keeper *k)
{
	char f = 0;
	if (k->note_fd < 0)
		return false;
	int fl = fcntl(k->note_fd, F_GETFL);
	fcntl(k->note_fd, F_SETFL, fl | O_NONBLOCK);
	ssize_t n = read(k->note_fd, &f, 1);
	return n == 1 && f == 'F';
}

void al_ct_keeper_discard(al_ct_keeper *k)
{
	if (k->go_fd >= 0)
		close(k->go_fd);
	k->go_fd = -1;
	if (k->note_fd >= 0)
		close(k->note_fd);
	k->note_fd = -1;
	if (k->child.pid > 0 || k->child.stdin_fd >= 0 ||
	    k->child.signal_ctx != NULL)
		al_child_discard(&k->child);
	k->pid = -1;
}

void al_ct_keeper_close_note(al_ct_keeper *k)
{
	if (k->note_fd >= 0)
		close(k->note_fd);
	k->note_fd = -1;
}

int al_ct_run_quiet(char *const *argv, char **out_text, size_t cap)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close_pair(p);
		return -e;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0 || dup2(p[1], 1) < 0 ||
		    dup2(p[1], 2) < 0)
			_exit(127);
		al_close_fds_from(3, NULL, 0);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	char *buf = out_text ? calloc(1, cap + 1) : NULL;
	size_t len = 0;
	char tmp[1024];
	ssize_t n;
	while ((n = read(p[0], tmp, sizeof(tmp))) > 0 ||
	       (n < 0 && errno == EINTR)) {
		if (n <= 0)
			continue;
		size_t take = buf && len < cap ? (cap - len < (size_t)n
							  ? cap - len
							  : (size_t)n)
					      : 0;
		if (take)
			memcpy(buf + len, tmp, take);
		len += take;
	}
	close(p[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			free(buf);
			return -errno;
		}
	if (out_text)
		*out_text = buf;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
