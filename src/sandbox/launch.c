/* Starting one sandboxed program: clone3 into namespaces, the init's setup
 * and the program's last steps before exec.  See launch.h.
 *
 * Everything between clone and exec runs in a copy of a possibly
 * multi-threaded process, so it only makes system calls on data the parent
 * prepared: no allocation, and raw system calls where glibc would act on
 * every thread it believes exists (set*id broadcast to all threads, fork's
 * atfork locks), since those threads are not in the copy and a wrapper
 * would wait for them forever. */
#include "sandbox/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <linux/securebits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child/shepherd.h"
#include "core/clone_vm.h"
#include "core/util.h"
#include "sandbox/init_image.h"
#include "sandbox/launch_proto.h"
#include "sandbox/member_go.h"
#include "sandbox/netns.h"
#include "sandbox/userns.h"

/* How long the parent waits for the init's setup steps to answer (the
 * workspace handed over, the program's exec): far more than any setup
 * takes, short enough that a wedged init is reported as a timeout rather
 * than holding the run forever. */
#define SETUP_WAIT_MS 30000
/* A tree kill: how long the init may take to die after SIGKILL (its pid
 * namespace goes with it), then how long the run's cgroups may take to
 * empty, polled every KILL_POLL_MS and killed again every KILL_REPEAT
 * polls (a process forked while cgroup.kill ran).  Bounded: a cgroup
 * that never empties is reported (-EBUSY), not waited on forever. */
#define KILL_INIT_WAIT_MS 5000
#define KILL_POLL_MS 2
#define KILL_EMPTY_WAIT_MS 5000
#define KILL_REPEAT 50
/* AddressSanitizer takes the program's own stack (spawn_program) for a
 * broken one and warns on the program's stderr: its builds fork. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED_BUILD 1
#else
#define SANITIZED_BUILD 0
#endif
/* The program's stack between its clone and its execve (spawn_program):
 * its setup calls need a few KiB; sanitizer builds need more. */
#define PROGRAM_STACK_BYTES (256 * 1024)

static const char *const stage_names[ST__N] = {
	[ST_SYNC] = "sync",	     [ST_CGROUP] = "cgroup",
	[ST_CGROUPNS] = "cgroup_namespace",
	[ST_MOUNTS] = "mounts",	     [ST_WORKSPACE] = "workspace",
	[ST_VERIFY] = "workspace_verify",
	[ST_NET] = "network",
	[ST_UTS] = "hostname",	     [ST_USERNS] = "user_namespace",
	[ST_FORK] = "fork",	     [ST_STDIO] = "stdio",
	[ST_SETSID] = "setsid",	     [ST_RLIMIT] = "rlimits",
	[ST_CHDIR] = "chdir",	     [ST_NNP] = "no_new_privs",
	[ST_CAPS] = "capabilities",  [ST_LANDLOCK] = "landlock",
	[ST_SECCOMP] = "seccomp",    [ST_EXEC] = "exec",
	[ST_GO] = "warm_go",	     [ST_READY] = "ready",
	[ST_INIT_EXEC] = "init_exec",
};

const char *al_sb_stage_name(int stage)
{
	return stage > 0 && stage < ST__N ? stage_names[stage] : "unknown";
}

/* Only ints: al_sb_launch_start sets every one to -1 at once. */
struct fds {
	int in[2], out[2], err[2], status[2], sync[2], fail[2];
	int ws[2]; /* socket pair: the workspace descriptor, the verdict */
	int cg_tasks[AL_CG__N]; /* v1 `tasks` files the init joins */
};

static _Noreturn void fail(int fd, int stage, int err, int op)
{
	struct al_sb_fail_msg m = {stage, err, op};
	ssize_t w = write(fd, &m, sizeof(m));
	(void)w;
	_exit(126);
}

static void close_range_except(int low, int keep)
{
	if (keep >= low) {
		if (keep > low)
			syscall(SYS_close_range, low, keep - 1, 0);
		syscall(SYS_close_range, keep + 1, ~0U, 0);
	} else {
		syscall(SYS_close_range, low, ~0U, 0);
	}
}

/* The bounding set emptied, in the init once its user namespace is
 * final (making one fills the set again) and before the program is
 * started: the program inherits the empty set, so one pass of a system
 * call per capability serves both. */
static int drop_bounding(int cap_last)
{
	for (int c = 0; c <= cap_last; c++)
		if (cap_drop_bound((cap_value_t)c) < 0 && errno != EINVAL)
			return -errno;
	return 0;
}

/* Every capability gone from every other set (the bounding set is
 * already empty: drop_bounding); root inside the user namespace gains
 * nothing on exec (securebits), setuid bits are inert (nosuid +
 * no_new_privs). */
static int drop_caps(bool lock_bits)
{
	if (lock_bits &&
	    prctl(PR_SET_SECUREBITS,
		  SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_SETUID_FIXUP |
			  SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_NOROOT |
			  SECBIT_NOROOT_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
			  SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED) < 0)
		return -errno;
	/* One call: libcap's cap_reset_ambient asks about every capability
	 * first, 41 system calls in both the init and the program. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL)
		return -errno;
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	return 0;
}

/* The hexadecimal mask after "\nNAME:\t" in a /proc status text. */
static bool status_mask(const char *text, const char *name, uint64_t *mask)
{
	const char *p = strstr(text, name);
	if (p == NULL)
		return false;
	p += strlen(name);
	uint64_t v = 0;
	int digits = 0;
	for (int d; digits < 16 && (d = al_hex_digit(*p)) >= 0; p++, digits++)
		v = v << 4 | (uint64_t)d;
	*mask = v;
	return digits == 16;
}

/* The signals the program would inherit other than at their default:
 * those its caller ignores or handles, from the kernel's own masks (three
 * system calls rather than one per signal).  False when they cannot be
 * read: every signal is then reset. */
static bool signals_to_reset(uint64_t *mask)
{
	char text[4096];
	if (al_read_head("/proc/self/status", text, sizeof(text)) < 0)
		return false;
	uint64_t ign, cgt;
	if (!status_mask(text, "\nSigIgn:\t", &ign) ||
	    !status_mask(text, "\nSigCgt:\t", &cgt))
		return false;
	*mask = ign | cgt;
	return true;
}

/* The kernel's own sigaction: libc's refuses the signals it reserves
 * (32 and 33 in glibc), which a caller may still have set to be ignored
 * and which the program would then inherit. */
struct kernel_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

static void reset_signals(void)
{
	struct kernel_sigaction dfl = {.handler = SIG_DFL};
	uint64_t mask = ~(uint64_t)0;
	if (!signals_to_reset(&mask))
		mask = ~(uint64_t)0;
	for (int s = 1; s <= 64; s++)
		if (s != SIGKILL && s != SIGSTOP && (mask >> (s - 1) & 1))
			syscall(SYS_rt_sigaction, s, &dfl, NULL,
				sizeof(dfl.mask));
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The run's host uid and gid, for good (the raw calls: glibc's would
 * wait for the caller's other threads, absent in a copy). */
static int become_host_ids(const al_sb_launch *l)
{
	if (syscall(SYS_setgroups, 0, NULL) < 0 ||
	    syscall(SYS_setresgid, l->host_gid, l->host_gid, l->host_gid) < 0 ||
	    syscall(SYS_setresuid, l->host_uid, l->host_uid, l->host_uid) < 0)
		return -errno;
	return 0;
}

/* The program of a vm init (run_init_vm) makes the run's user namespace
 * itself: it leaves root for the run's host ids, unshares, asks the init
 * (root still) for its id maps and waits until *mapped says they are
 * written.  Neither process ever turns dumpable to write its own maps:
 * their memory is their caller's (a root daemon's), which a dumpable
 * process of the run's uid would open to every other process of that uid
 * on the host. */
static void program_enter_userns(const al_sb_launch *l, int ff,
				 _Atomic int *mapped)
{
	int rc = become_host_ids(l);
	/* the change of credentials left the memory as fs.suid_dumpable
	 * says, which an administrator may have set to 1 */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (rc < 0 || unshare(CLONE_NEWUSER) < 0)
		fail(ff, ST_USERNS, rc < 0 ? -rc : errno, 0);
	struct al_sb_fail_msg ask = {ST_READY, 0, READY_MAP_ME};
	if (write(ff, &ask, sizeof(ask)) != (ssize_t)sizeof(ask))
		_exit(126);
	int v;
	while ((v = atomic_load(mapped)) == 0)
		syscall(SYS_futex, mapped, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	if (v < 0)
		_exit(126);
	/* making the namespace filled the bounding set again */
	rc = drop_bounding(l->cap_last);
	if (rc < 0)
		fail(ff, ST_CAPS, -rc, 1);
}

/* "KEY=A" or "KEY=A:B" (b >= 0) into buf, with no allocation and no
 * locale: the environment of airlock-sandbox-init (src/sbinit/main.c). */
static void env_numbers(char *buf, size_t len, const char *key, long a, long b)
{
	size_t n = strlen(key);
	if (n + 2 >= len) {
		buf[0] = '\0';
		return;
	}
	memcpy(buf, key, n);
	buf[n++] = '=';
	long v[2] = {a, b};
	for (int i = 0; i < 2 && v[i] >= 0; i++) {
		char digits[24];
		int k = 0;
		if (i == 1 && n + 2 < len)
			buf[n++] = ':';
		do
			digits[k++] = (char)('0' + v[i] % 10);
		while ((v[i] /= 10) > 0 && k < (int)sizeof(digits));
		while (k > 0 && n + 2 < len)
			buf[n++] = digits[--k];
	}
	buf[n] = '\0';
}

/* A held member's program, once let go: airlock-sandbox-init's waiter
 * takes its place (member_go.h), so that the wait for the request is
 * not spent in the caller's memory.  The fail pipe stays open across the
 * execve for the waiter's reports; the image's descriptor does not. */
static _Noreturn void exec_member_waiter(int ff, int image_fd)
{
	if (syscall(SYS_fcntl, ff, F_SETFD, 0) < 0)
		fail(ff, ST_EXEC, errno, 2);
	char env[64];
	env_numbers(env, sizeof(env), AL_SB_GO_ENV, ff, -1);
	char *const argv[] = {"airlock-go", NULL};
	char *const envp[] = {env, NULL};
	syscall(SYS_execveat, image_fd, "", argv, envp, AT_EMPTY_PATH);
	fail(ff, ST_EXEC, errno, 1);
}

/* The program's last steps.  held: started by run_init_vm in the caller's
 * memory, it reports itself ready on the fail pipe once everything but
 * the execve is done and waits for the caller's go on the sync pipe;
 * mapped: it makes the run's user namespace first; image_fd: a held
 * member's waiter (exec_member_waiter). */
static _Noreturn void run_program(const al_sb_launch *l, const struct fds *f,
				  bool held, _Atomic int *mapped, int image_fd)
{
	int ff = f->fail[1];
	/* Held, it goes on after its caller has resumed and reused the
	 * descriptors' numbers in *f: nothing of *f is read after the ready. */
	int go_fd = held ? f->sync[0] : -1;
	if (mapped != NULL)
		program_enter_userns(l, ff, mapped);
	int in = l->stdin_pipe ? f->in[0]
			       : open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in < 0 || dup2(in, 0) < 0 || dup2(f->out[1], 1) < 0 ||
	    dup2(f->err[1], 2) < 0)
		fail(ff, ST_STDIO, errno, 0);
	if (setsid() < 0)
		fail(ff, ST_SETSID, errno, 0);
	if (held) {
		int keep[3] = {ff, go_fd, image_fd};
		al_close_fds_from(3, keep, image_fd >= 0 ? 3 : 2);
	} else {
		close_range_except(3, ff);
	}
	reset_signals();
	for (size_t i = 0; i < l->n_rlimits; i++) {
		struct rlimit rl = {l->rlimits[i].value, l->rlimits[i].value};
		/* A second of headroom: the soft limit's SIGXCPU names the
		 * cause (killed/cpu_limit) before the hard limit's SIGKILL,
		 * which still ends a program that ignores it. */
		if (l->rlimits[i].resource == RLIMIT_CPU)
			rl.rlim_max = rl.rlim_cur + 1;
		if (setrlimit(l->rlimits[i].resource, &rl) < 0)
			fail(ff, ST_RLIMIT, errno, (int)i);
	}
	if (chdir(l->cwd) < 0)
		fail(ff, ST_CHDIR, errno, 0);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail(ff, ST_NNP, errno, 0);
	int rc = drop_caps(true);
	if (rc < 0)
		fail(ff, ST_CAPS, -rc, 0);
	rc = al_sb_landlock_apply(&l->landlock);
	if (rc < 0)
		fail(ff, ST_LANDLOCK, -rc, 0);
	/* A member copied from its caller reads its header into pages of
	 * its own, mapped here: malloc is not for a copy of a threaded
	 * caller, and a mapping is touched only as far as the header goes. */
	const size_t go_ptrs_bytes = AL_SB_GO_PTRS * sizeof(char *);
	char *go_mem = NULL;
	if (l->wait_go && !held) {
		go_mem = mmap(NULL, go_ptrs_bytes + AL_SB_GO_BUF,
			      PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (go_mem == MAP_FAILED)
			fail(ff, ST_GO, errno, 0);
	}
	if (l->filter) {
		rc = al_sb_filter_load(l->filter);
		if (rc < 0)
			fail(ff, ST_SECCOMP, -rc, 0);
	}
	if (go_mem != NULL)
		al_sb_member_go(ff, go_mem + go_ptrs_bytes, AL_SB_GO_BUF,
				(char **)(void *)go_mem, AL_SB_GO_PTRS);
	if (held) {
		struct al_sb_fail_msg ready = {ST_READY, 0, READY_GO};
		char go = 0;
		if (write(ff, &ready, sizeof(ready)) != (ssize_t)sizeof(ready))
			_exit(126);
		/* No go (the caller refused the workspace or went away):
		 * nothing of the program ran.  From here the caller's thread
		 * runs again beside us, its errno and thread block the ones
		 * we see: the raw call, not glibc's cancellable wrapper, and
		 * only execve's failure left to report. */
		if (syscall(SYS_read, go_fd, &go, 1) != 1 || go != 'g')
			_exit(126);
		syscall(SYS_close, go_fd);
		if (l->wait_go)
			exec_member_waiter(ff, image_fd);
	}
	execve(l->argv[0], l->argv, l->envp);
	fail(ff, ST_EXEC, errno, 0);
}

/* In the init: the run's tmpfs areas go to the parent as O_PATH
 * descriptors, the workspace's first; after a filled workspace the run
 * goes on only when the parent approves the files (nothing of the
 * program exists yet).  verdict_later: the parent, suspended until the
 * init has executed airlock-init, judges them then and holds the program
 * until it has (run_init_vm). */
static int hand_over(const al_sb_launch *l, int sock, bool verdict_later)
{
	bool ws = l->ws_fill || l->ws_hand;
	int fds[2] = {-1, -1}, n_fds = 0;
	if (ws)
		fds[n_fds++] = open("/workspace",
				    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (l->acks_fd_out != NULL)
		fds[n_fds++] = open("/inbox-acks",
				    O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	for (int i = 0; i < n_fds; i++)
		if (fds[i] < 0) {
			int e = errno;
			for (int j = 0; j < n_fds; j++)
				if (fds[j] >= 0)
					close(fds[j]);
			return -e;
		}
	char byte = 'w';
	struct iovec iov = {&byte, 1};
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
		.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n_fds)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n_fds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)n_fds);
	ssize_t n;
	do
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	int e = errno;
	for (int i = 0; i < n_fds; i++)
		close(fds[i]);
	if (n != 1)
		return -(n < 0 ? e : EPIPE);
	if (!l->ws_fill || verdict_later) {
		close(sock);
		return 0;
	}
	char verdict = 0;
	do
		n = read(sock, &verdict, 1);
	while (n < 0 && errno == EINTR);
	close(sock);
	return n == 1 && verdict == 'g' ? 0 : -EBADMSG;
}

/* fork() without glibc: its atfork handlers take locks (malloc arenas,
 * stdio) that another thread of the parent may have held when clone3
 * copied us, and would wait on them forever. */
static pid_t raw_fork(void)
{
	return (pid_t)syscall(SYS_clone, (unsigned long)SIGCHLD, 0UL, 0UL, 0UL,
			      0UL);
}

struct program_args {
	const al_sb_launch *l;
	const struct fds *f;
	bool held;
	_Atomic int *mapped; /* run_init_vm's: see program_enter_userns */
	int image_fd;	     /* run_init_vm's: see exec_member_waiter */
};

static int program_main(void *arg)
{
	const struct program_args *a = arg;
	run_program(a->l, a->f, a->held, a->mapped, a->image_fd);
}

/* The program as vfork does it: it borrows the init's memory until its
 * execve, so neither the copy of the init's page tables (a copy of the
 * caller's: the daemon, the CLI, an embedding host) nor their teardown
 * at that exec is paid (docs/performance.md, "The program started
 * vfork-style").  The init waits meanwhile; the program only makes system
 * calls on data prepared before the clone and writes nothing the init
 * reads after.  A warm member's program waits for its request before
 * exec, which would hold the init that long: it is forked (raw_fork). */
static pid_t spawn_program(const al_sb_launch *l, const struct fds *f)
{
	size_t size = PROGRAM_STACK_BYTES;
	char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		return -1;
	struct program_args a = {l, f, false, NULL, -1};
	pid_t pid = clone(program_main, stack + size,
			  CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
	int e = errno;
	munmap(stack, size);
	errno = e;
	return pid;
}

/* The calling process's argument strings, [arg_start, arg_end) of
 * /proc/self/stat.  The init is a copy of this process, and /proc/1/cmdline
 * inside the run shows that memory: the caller's command line (a state
 * directory, a supervisor's identity nonce, ...). */
static pthread_once_t args_once = PTHREAD_ONCE_INIT;
static uintptr_t args_start, args_end;

static void find_args(void)
{
	char buf[1024];
	if (al_read_head("/proc/self/stat", buf, sizeof(buf)) < 0)
		return;
	/* fields after the command name, which may hold spaces: field 3 is
	 * the one after ") " (proc(5) numbers them from 1) */
	enum { ARG_START = 48, ARG_END = 49 };
	char *p = strrchr(buf, ')');
	unsigned long long v[2] = {0, 0};
	for (int field = 2; p != NULL && field < ARG_END; field++) {
		p = strchr(p + 1, ' ');
		if (p != NULL && field + 1 >= ARG_START)
			v[field + 1 - ARG_START] = strtoull(p + 1, NULL, 10);
	}
	if (p != NULL && v[0] > 0 && v[1] > v[0]) {
		args_start = (uintptr_t)v[0];
		args_end = (uintptr_t)v[1];
	}
}

/* In the init (its own copy of that memory): the arguments become
 * "airlock-init".  The last byte of the area is set non-zero, so the
 * kernel shows the area only up to its first NUL (as for setproctitle)
 * rather than the whole zeroed length. */
static void clean_args(void)
{
	static const char name[] = "airlock-init";
	size_t len = args_end - args_start;
	if (args_start == 0 || len < 2)
		return;
	char *a = (char *)args_start;
	memset(a, 0, len);
	memcpy(a, name, len - 2 < sizeof(name) - 1 ? len - 2 : sizeof(name) - 1);
	a[len - 1] = ' ';
	/* The raw syscall: a sanitizer's prctl wrapper records the name
	 * under a lock another thread of the parent may have held when
	 * clone3 copied us, and would wait for it forever. */
	syscall(SYS_prctl, PR_SET_NAME, name, 0UL, 0UL, 0UL);
}

/* The init joins a namespace made ahead instead of a new one. */
static bool joins_netns_ahead(const al_sb_launch *l)
{
	return l->privileged && l->network != AL_NETWORK_HOST &&
	       l->netns_fd >= 0;
}

/* The copied init leaves root for the run's host uid in a user namespace
 * of its own, which the program inherits. */
static void init_drop_root(const al_sb_launch *l, int ff)
{
	/* Root built the view; from here on the run is its own
	 * unprivileged host uid, root only in a user namespace that owns
	 * none of the other namespaces. */
	int rc = become_host_ids(l);
	if (rc < 0 ||
	    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0 || /* own /proc/self */
	    unshare(CLONE_NEWUSER) < 0)
		fail(ff, ST_USERNS, rc < 0 ? -rc : errno, 0);
	rc = al_sb_write_idmaps(0, l->host_uid, l->host_gid);
	if (rc < 0)
		fail(ff, ST_USERNS, -rc, 1);
	/* A change of credentials clears the parent-death signal: set
	 * again, or a killed CLI or supervisor would leave the run going
	 * past its wall limit. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* The init's setup, the same either way it was started: namespaces,
 * cgroups, the view, the workspace, the run's identity.  vm: it runs in
 * its caller's memory (run_init_vm), whose thread waits meanwhile, so
 * the caller's argument strings are not its to clear, no sync comes (the
 * caller has nothing to do before it), the workspace's verdict comes
 * later, and the init is still root when it returns (run_init_vm). */
static void init_setup(const al_sb_launch *l, const struct fds *f, bool vm)
{
	int ff = f->fail[1];
	if (!vm)
		clean_args();
	sigset_t set;
	al_shepherd_block_signals(&set);
	/* The init dies with the thread that started it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	close(f->in[1]);
	close(f->out[0]);
	close(f->err[0]);
	close(f->status[0]);
	close(f->sync[1]);
	if (!vm)
		close(f->fail[0]);
	if (f->ws[0] >= 0)
		close(f->ws[0]);

	if (!vm) {
		char go;
		if (read(f->sync[0], &go, 1) != 1)
			fail(ff, ST_SYNC, errno ? errno : EPIPE, 0);
		close(f->sync[0]);
	}
	/* The network namespace made ahead, before anything is set up in
	 * one: the init came without CLONE_NEWNET (do_clone). */
	if (joins_netns_ahead(l)) {
		if (setns(l->netns_fd, CLONE_NEWNET) < 0)
			fail(ff, ST_NET, errno, 0);
		close(l->netns_fd);
	}
	/* Into the run's v1 cgroups before anything else: the program is
	 * forked inside them, and the cgroup namespace below is rooted at
	 * the cgroup the init is in when it is created. */
	if (al_sb_cgrun_join_self(f->cg_tasks) < 0)
		fail(ff, ST_CGROUP, errno, 0);
	for (int i = 0; i < AL_CG__N; i++)
		if (f->cg_tasks[i] >= 0)
			close(f->cg_tasks[i]);
	if (unshare(CLONE_NEWCGROUP) < 0)
		fail(ff, ST_CGROUPNS, errno, 0);
	int op;
	int rc = al_sb_mounts_apply(l->mounts, "/tmp", &op);
	if (rc < 0)
		fail(ff, ST_MOUNTS, -rc, op);
	if (l->ws_fill) {
		rc = al_sb_workspace_fill(l->ws_items, l->n_ws_items, l->ws_uid,
					  l->ws_gid, l->ws_ro);
		if (rc < 0)
			fail(ff, ST_WORKSPACE, -rc, 0);
	}
	if (f->ws[1] >= 0) {
		rc = hand_over(l, f->ws[1], vm);
		if (rc < 0)
			fail(ff, ST_VERIFY, -rc, 0);
	}
	if (l->network == AL_NETWORK_LOOPBACK) {
		rc = al_sb_loopback_up();
		if (rc < 0)
			fail(ff, ST_NET, -rc, 0);
	}
	if (l->network != AL_NETWORK_HOST && sethostname("airlock", 7) < 0)
		fail(ff, ST_UTS, errno, 0);
	if (vm)
		return;
	if (l->privileged)
		init_drop_root(l, ff);
	/* The init's memory holds the host's environment: the program (same
	 * uid) must not read it through /proc/1. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	rc = drop_bounding(l->cap_last);
	if (rc < 0)
		fail(ff, ST_CAPS, -rc, 1);
}

static _Noreturn void run_init(const al_sb_launch *l, const struct fds *f)
{
	int ff = f->fail[1];
	init_setup(l, f, false);
	pid_t prog = l->wait_go || SANITIZED_BUILD ? raw_fork()
						   : spawn_program(l, f);
	if (prog < 0)
		fail(ff, ST_FORK, errno, 0);
	if (prog == 0)
		run_program(l, f, false, NULL, -1);
	close(f->in[0]);
	close(f->out[1]);
	close(f->err[1]);
	close(ff);
	close_range_except(3, f->status[1]);
	drop_caps(false);
	_exit(al_shepherd_loop(prog, f->status[1], true));
}

/* What run_init_vm needs besides the launch: the program's stack and the
 * image it executes. */
struct init_vm_args {
	const al_sb_launch *l;
	const struct fds *f;
	char *program_stack_top;
	int image_fd;
};

/* The held program's next message on the fail pipe (the init holds a
 * write end too: the program's death is seen on its pidfd).  A failure
 * is passed on as it came and ends the init. */
static void init_wait_program(const struct fds *f, int pidfd, int op,
			      struct al_sb_fail_msg *m)
{
	int ff = f->fail[1];
	struct pollfd p[2] = {{f->fail[0], POLLIN, 0}, {pidfd, POLLIN, 0}};
	int r;
	do
		r = poll(p, 2, SETUP_WAIT_MS);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		fail(ff, ST_FORK, r == 0 ? ETIMEDOUT : errno, 2);
	if (!(p[0].revents & POLLIN))
		fail(ff, ST_FORK, ECHILD, 3);
	ssize_t n;
	do
		n = read(f->fail[0], m, sizeof(*m));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(*m))
		fail(ff, ST_FORK, EPIPE, 1);
	if (m->stage != ST_READY) {
		ssize_t w = write(ff, m, sizeof(*m));
		(void)w;
		_exit(126);
	}
	if (m->op != op)
		fail(ff, ST_FORK, EPROTO, 4);
}

static void wake_mapped(_Atomic int *mapped, int v)
{
	atomic_store(mapped, v);
	syscall(SYS_futex, mapped, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* The init started in its caller's memory (clone_init_vm): the setup,
 * then the program — in the same memory, not waited for, held before its
 * execve —, then airlock-init executed in the init's place, which frees
 * the caller.  Nothing of the caller is copied or write-protected, and
 * the program runs no code of its own before the init is airlock-init:
 * /proc/1 never shows the caller's memory to it.  The caller judges the
 * workspace and lets the program go (al_sb_launch_start). */
static int run_init_vm(void *arg)
{
	const struct init_vm_args *a = arg;
	const al_sb_launch *l = a->l;
	const struct fds *f = a->f;
	int ff = f->fail[1];
	init_setup(l, f, true);
	_Atomic int mapped = 0;
	struct program_args pa = {l, f, true, &mapped,
				  l->wait_go ? a->image_fd : -1};
	int pidfd = -1;
	pid_t prog = clone(program_main, a->program_stack_top,
			   CLONE_VM | CLONE_PIDFD | SIGCHLD, &pa, &pidfd);
	if (prog < 0)
		fail(ff, ST_FORK, errno, 0);
	struct al_sb_fail_msg m;
	init_wait_program(f, pidfd, READY_MAP_ME, &m);
	int rc = al_sb_write_idmaps(prog, l->host_uid, l->host_gid);
	if (rc < 0) {
		wake_mapped(&mapped, -1);
		fail(ff, ST_USERNS, -rc, 1);
	}
	wake_mapped(&mapped, 1);
	/* The init is the run's host uid as well, in no user namespace: no
	 * capability anywhere, and not dumpable (the change of credentials
	 * makes it so; said again below).  It clears the parent-death
	 * signal: set again. */
	rc = become_host_ids(l);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if (rc < 0)
		fail(ff, ST_USERNS, -rc, 2);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	init_wait_program(f, pidfd, READY_GO, &m);
	close(pidfd);
	close(f->in[0]);
	close(f->out[1]);
	close(f->err[1]);
	close(f->fail[0]);
	close(f->sync[0]);
	int keep[3] = {f->status[1], a->image_fd, ff};
	al_close_fds_from(3, keep, 3);
	rc = drop_caps(false);
	if (rc < 0)
		fail(ff, ST_CAPS, -rc, 2);
	if (fcntl(f->status[1], F_SETFD, 0) < 0)
		fail(ff, ST_INIT_EXEC, errno, 1);
	char env[64];
	env_numbers(env, sizeof(env), "AL_SANDBOX_INIT", f->status[1], prog);
	char *const argv[] = {"airlock-init", NULL};
	char *const envp[] = {env, NULL};
	syscall(SYS_execveat, a->image_fd, "", argv, envp, AT_EMPTY_PATH);
	fail(ff, ST_INIT_EXEC, errno, 0);
}

/* ---- parent ---------------------------------------------------------- */

struct sigctx {
	int pidfd;
	al_sb_cgrun *cg;
};

static int pidfd_signal(int pidfd, int sig)
{
	return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno
								       : 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int sb_signal_tree(void *vctx, int sig)
{
	struct sigctx *c = vctx;
	if (sig != SIGKILL)
		return pidfd_signal(c->pidfd, sig);
	/* cgroup.kill takes every process at once; killing the init takes
	 * the whole pid namespace down with it. */
	al_sb_cgrun_kill(c->cg);
	int rc = pidfd_signal(c->pidfd, SIGKILL);
	if (rc == -ESRCH)
		rc = 0;
	struct pollfd p = {c->pidfd, POLLIN, 0};
	poll(&p, 1, KILL_INIT_WAIT_MS);
	for (int i = 0; i < KILL_EMPTY_WAIT_MS / KILL_POLL_MS &&
			!al_sb_cgrun_empty(c->cg);
	     i++) {
		if (i % KILL_REPEAT == KILL_REPEAT - 1)
			al_sb_cgrun_kill(c->cg);
		sleep_ms(KILL_POLL_MS);
	}
	return al_sb_cgrun_empty(c->cg) ? rc : -EBUSY;
}

void al_sb_signal_ctx_free(void *ctx)
{
	struct sigctx *c = ctx;
	if (c == NULL)
		return;
	if (c->pidfd >= 0)
		close(c->pidfd);
	free(c);
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0) {
			close(p[i]);
			p[i] = -1;
		}
}

/* The init's namespaces and pidfd, either way it is started. */
static void init_clone_args(const al_sb_launch *l, int *pidfd,
			    struct clone_args *ca)
{
	uint64_t flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET |
			 CLONE_NEWIPC | CLONE_NEWUTS | CLONE_PIDFD;
	if (!l->privileged)
		flags |= CLONE_NEWUSER;
	if (l->network == AL_NETWORK_HOST || joins_netns_ahead(l))
		flags &= ~(uint64_t)CLONE_NEWNET;
	memset(ca, 0, sizeof(*ca));
	ca->flags = flags;
	ca->pidfd = (uint64_t)(uintptr_t)pidfd;
	ca->exit_signal = SIGCHLD;
}

static pid_t do_clone(const al_sb_launch *l, int *pidfd, bool *in_v2)
{
	struct clone_args ca;
	init_clone_args(l, pidfd, &ca);
	/* a cgroup that refuses direct placement is attached later */
	return al_cg_clone3(&ca, l->cgroups ? l->cgroups->v2_fd : -1, in_v2);
}

void al_sb_launch_prepare(bool privileged)
{
	if (!SANITIZED_BUILD && privileged)
		(void)al_sb_init_image_fd();
}

/* Stacks for run_init_vm and its program, each below a guard page:
 * reused, since a fresh mapping's pages would fault in on every run.  A
 * set is taken per start and given back once nothing runs on it (the
 * program executed, or the init and its pid namespace are gone); they
 * live as long as the process. */
#define VM_STACK_BYTES (256 * 1024)
#define VM_GUARD_BYTES 4096
struct vm_stacks {
	struct vm_stacks *next;
	char *base;
};

static pthread_mutex_t vm_stacks_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vm_stacks *vm_stacks_free;

static char *vm_stack_top(const struct vm_stacks *s, int which)
{
	return s->base + (size_t)(which + 1) * (VM_GUARD_BYTES + VM_STACK_BYTES);
}

static struct vm_stacks *vm_stacks_get(void)
{
	pthread_mutex_lock(&vm_stacks_lock);
	struct vm_stacks *s = vm_stacks_free;
	if (s != NULL)
		vm_stacks_free = s->next;
	pthread_mutex_unlock(&vm_stacks_lock);
	if (s != NULL)
		return s;
	s = malloc(sizeof(*s));
	if (s == NULL)
		return NULL;
	size_t len = 2 * (VM_GUARD_BYTES + VM_STACK_BYTES);
	s->next = NULL;
	s->base = mmap(NULL, len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (s->base == MAP_FAILED) {
		free(s);
		return NULL;
	}
	for (int i = 0; i < 2; i++)
		if (mprotect(vm_stack_top(s, i) - VM_STACK_BYTES,
			     VM_STACK_BYTES, PROT_READ | PROT_WRITE) < 0) {
			munmap(s->base, len);
			free(s);
			return NULL;
		}
	return s;
}

static void vm_stacks_put(struct vm_stacks *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&vm_stacks_lock);
	s->next = vm_stacks_free;
	vm_stacks_free = s;
	pthread_mutex_unlock(&vm_stacks_lock);
}

/* The init started in this process's memory (run_init_vm), placed into
 * the run's v2 cgroup by clone3 itself.  Returns its pid once it has
 * executed airlock-init or ended, with *stacks set; 0 when that way is
 * not open here and the caller copies itself instead (do_clone): an
 * unprivileged run (the caller writes its id maps after the clone), a
 * sanitizer's build, no executable memfd, clone3 vfork-style missing
 * (core/clone_vm.h) or the v2 cgroup refusing the placement; -1 with
 * errno when the clone failed for want of memory or processes. */
static pid_t clone_init_vm(const al_sb_launch *l, struct fds *f, int *pidfd,
			   struct vm_stacks **stacks, struct init_vm_args *a)
{
	if (SANITIZED_BUILD || !l->privileged ||
	    (l->cgroups && l->cgroups->v2_dir && l->cgroups->v2_fd < 0))
		return 0;
	int image = al_sb_init_image_fd();
	if (image < 0)
		return 0;
	struct vm_stacks *s = vm_stacks_get();
	if (s == NULL)
		return 0;
	*a = (struct init_vm_args){l, f, vm_stack_top(s, 0), image};
	struct clone_args ca;
	init_clone_args(l, pidfd, &ca);
	int cg = l->cgroups ? l->cgroups->v2_fd : -1;
	if (cg >= 0) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)cg;
	}
	pid_t pid = al_clone3_vm(&ca, run_init_vm, a,
				 vm_stack_top(s, 1) - VM_STACK_BYTES,
				 VM_STACK_BYTES);
	if (pid > 0) {
		*stacks = s;
		return pid;
	}
	int e = errno;
	vm_stacks_put(s);
	errno = e;
	return e == ENOMEM || e == EAGAIN ? -1 : 0;
}

/* In the parent: takes the descriptors from the init (hand_over), has a
 * filled workspace judged and answers.  Returns 0 with *wfd (when the
 * workspace is handed over) and *afd (the acks) set, 1 when the init
 * failed first (its report is on the fail pipe), or a negative errno. */
static int receive_areas(const al_sb_launch *l, int sock, int fail_fd,
			 bool answer, int *wfd, int *afd)
{
	*wfd = *afd = -1;
	int want = (l->ws_fill || l->ws_hand) + (l->acks_fd_out != NULL);
	struct pollfd p[2] = {{sock, POLLIN, 0}, {fail_fd, POLLIN, 0}};
	int r;
	do
		r = poll(p, 2, SETUP_WAIT_MS);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return -ETIMEDOUT;
	if (r < 0)
		return -errno;
	if (!(p[0].revents & POLLIN))
		return 1;
	char byte;
	struct iovec iov = {&byte, 1};
	int fds[2] = {-1, -1};
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	ssize_t n;
	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return 1; /* the init went away: its report says why */
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	if (cm == NULL || cm->cmsg_level != SOL_SOCKET ||
	    cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(sizeof(int) * (size_t)want)) {
		/* whatever came is closed: nothing of it is used */
		bool rights = cm != NULL && cm->cmsg_level == SOL_SOCKET &&
			      cm->cmsg_type == SCM_RIGHTS &&
			      cm->cmsg_len > CMSG_LEN(0);
		size_t got = rights ? (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int)
				    : 0;
		for (size_t i = 0; i < got && i < 2; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			close(fd);
		}
		return -EPROTO;
	}
	memcpy(fds, CMSG_DATA(cm), sizeof(int) * (size_t)want);
	int k = 0;
	if (l->ws_fill || l->ws_hand)
		*wfd = fds[k++];
	if (l->acks_fd_out != NULL)
		*afd = fds[k];
	if (!l->ws_fill)
		return 0;
	int ok = l->ws_check ? l->ws_check(l->ws_check_ctx, *wfd) : 0;
	/* !answer: the init is gone already (run_init_vm); a refusal is
	 * ours to report, and the program is never let go */
	if (!answer)
		return ok == 0 ? 0 : -EBADMSG;
	char verdict = ok == 0 ? 'g' : 'x';
	if (write(sock, &verdict, 1) != 1 && ok == 0)
		return -errno;
	return 0;
}

/* Waits for the program's exec (the fail pipe closes) or a failure.
 * member: a warm member's READY_MEMBER counts as started.  A held
 * program's other readies are its init's to read, and reach us only if
 * the init died before it could.  m->stage is 0 after the pipe closed. */
static int wait_started(int fd, struct al_sb_fail_msg *m, bool member)
{
	m->stage = 0;
	struct pollfd p = {fd, POLLIN, 0};
	int r;
	do
		r = poll(&p, 1, SETUP_WAIT_MS);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return -ETIMEDOUT;
	ssize_t n;
	do
		n = read(fd, m, sizeof(*m));
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return 0;
	if (n != (ssize_t)sizeof(*m) ||
	    (m->stage == ST_READY && (!member || m->op != READY_MEMBER)))
		return -EPROTO;
	return m->stage == ST_READY ? 0 : 1;
}

int al_sb_go_failed(int fail_fd, const char **reason)
{
	struct al_sb_fail_msg m;
	int rc = wait_started(fail_fd, &m, true);
	if (rc == 1)
		*reason = m.stage != ST_EXEC ? "sandbox_unavailable"
			  : m.err == ENOEXEC ? "exec_format"
					     : "start_failed";
	return rc;
}

int al_sb_launch_start(const al_sb_launch *l, al_child *child,
		       al_error **err)
{
	struct fds f;
	int *all = (int *)&f;
	for (size_t i = 0; i < sizeof(f) / sizeof(int); i++)
		all[i] = -1;
	int pidfd = -1, wfd = -1, afd = -1;
	bool hand = l->ws_fill || l->ws_hand || l->acks_fd_out != NULL;
	pid_t pid = -1;
	struct sigctx *ctx = NULL;
	struct vm_stacks *stacks = NULL;
	int rc = 0;
	const char *reason = "sandbox_unavailable";
	const char *what = "creating pipes";

	if ((l->stdin_pipe && l->stdin_src >= 0 &&
	     (f.in[0] = fcntl(l->stdin_src, F_DUPFD_CLOEXEC, 3)) < 0) ||
	    (l->stdin_pipe && l->stdin_src < 0 && pipe2(f.in, O_CLOEXEC) < 0) ||
	    pipe2(f.out, O_CLOEXEC) < 0 || pipe2(f.err, O_CLOEXEC) < 0 ||
	    pipe2(f.status, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, f.sync) < 0 ||
	    pipe2(f.fail, O_CLOEXEC) < 0 ||
	    (hand &&
	     socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, f.ws) < 0)) {
		rc = -errno;
		goto fail;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	ctx->pidfd = -1;
	ctx->cg = l->cgroups;
	what = "opening the run's cgroups";
	if (l->cgroups) {
		rc = al_sb_cgrun_open_tasks(l->cgroups, f.cg_tasks);
		if (rc < 0)
			goto fail;
	}

	bool in_v2 = true;
	what = "clone3 into namespaces";
	struct init_vm_args vm_args;
	pid = clone_init_vm(l, &f, &pidfd, &stacks, &vm_args);
	if (pid == 0) {
		pthread_once(&args_once, find_args);
		pid = do_clone(l, &pidfd, &in_v2);
		if (pid == 0)
			run_init(l, &f);
	}
	if (pid < 0) {
		rc = -errno;
		goto fail;
	}

	if (f.in[0] >= 0)
		close(f.in[0]);
	f.in[0] = -1;
	close(f.out[1]);
	close(f.err[1]);
	close(f.status[1]);
	close(f.sync[0]);
	close(f.fail[1]);
	f.out[1] = f.err[1] = f.status[1] = f.sync[0] = f.fail[1] = -1;
	if (f.ws[1] >= 0)
		close(f.ws[1]);
	f.ws[1] = -1;
	al_sb_cgrun_close_tasks(f.cg_tasks);

	what = "writing the uid map";
	if (!l->privileged) {
		/* our own ids are the only ones the kernel lets us map (the
		 * caller's gid is not its uid for every user) */
		rc = al_sb_write_idmaps(pid, geteuid(), getegid());
		if (rc < 0)
			goto fail_child;
	}
	what = "joining the run's cgroups";
	if (l->cgroups && !in_v2) {
		rc = al_sb_cgrun_attach_v2(l->cgroups, pid);
		if (rc < 0)
			goto fail_child;
	}
	/* The init is released now; run_init_vm's is airlock-init already
	 * and its program waits for the same byte once the workspace is
	 * judged.  A send, not a write: a reader gone is EPIPE, and its
	 * report is on the fail pipe. */
	what = "releasing the init";
	if (stacks == NULL && send(f.sync[1], "g", 1, MSG_NOSIGNAL) != 1) {
		rc = -errno;
		goto fail_child;
	}

	if (hand) {
		what = "receiving the workspace";
		rc = receive_areas(l, f.ws[0], f.fail[0], stacks == NULL, &wfd,
				   &afd);
		if (rc == -EBADMSG && stacks != NULL) {
			reason = "bundle_mismatch";
			what = al_sb_stage_name(ST_VERIFY);
		}
		if (rc < 0)
			goto fail_child;
		close_pair(f.ws);
	}
	what = "releasing the program";
	if (stacks != NULL && send(f.sync[1], "g", 1, MSG_NOSIGNAL) != 1 &&
	    errno != EPIPE) {
		rc = -errno;
		goto fail_child;
	}
	close(f.sync[1]);
	f.sync[1] = -1;
	struct al_sb_fail_msg m;
	what = "waiting for the sandbox setup";
	rc = wait_started(f.fail[0], &m, l->wait_go);
	/* A member reports its ready before anything else, in a copy or as
	 * the waiter (whose fail pipe stays open across its execve): the
	 * pipe closing first means it died. */
	if (rc == 0 && l->wait_go && m.stage != ST_READY)
		rc = -ECHILD;
	if (rc != 0) {
		if (rc == 1) {
			rc = -(m.err ? m.err : EIO);
			/* ENOEXEC: the program is no executable this
			 * kernel runs (a broken or foreign binary). */
			if (m.stage == ST_EXEC)
				reason = m.err == ENOEXEC ? "exec_format"
							  : "start_failed";
			else if (m.stage == ST_WORKSPACE)
				reason = m.err == ENOSPC || m.err == EFBIG
						 ? "workspace_no_space"
						 : "workspace_setup_failed";
			else if (m.stage == ST_VERIFY)
				reason = m.err == EBADMSG
						 ? "bundle_mismatch"
						 : "workspace_setup_failed";
			what = al_sb_stage_name(m.stage);
		}
		goto fail_child;
	}
	/* the program has executed: nothing runs on the stacks any more */
	vm_stacks_put(stacks);
	stacks = NULL;
	if (l->wait_go && l->go_fail_fd != NULL)
		*l->go_fail_fd = f.fail[0];
	else
		close(f.fail[0]);
	f.fail[0] = -1;

	ctx->pidfd = dup(pidfd);
	if (ctx->pidfd < 0) {
		rc = -errno;
		what = "dup";
		goto fail_child;
	}
	if (l->ws_fd_out != NULL)
		*l->ws_fd_out = wfd;
	else if (wfd >= 0)
		close(wfd);
	if (l->acks_fd_out != NULL)
		*l->acks_fd_out = afd;
	*child = (al_child){
		.pid = pid,
		.pidfd = pidfd,
		.stdin_fd = f.in[1],
		.stdout_fd = f.out[0],
		.stderr_fd = f.err[0],
		.status_fd = f.status[0],
		.signal_tree = sb_signal_tree,
		.signal_ctx = ctx,
	};
	return 0;

fail_child:
	if (pidfd >= 0) {
		pidfd_signal(pidfd, SIGKILL);
		ctx->pidfd = pidfd;
		if (l->cgroups)
			al_sb_cgrun_kill(l->cgroups);
	}
	while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
		;
	ctx->pidfd = -1;
	/* the init reaped: its pid namespace, the held program with it, is
	 * gone, and the stacks are free */
	vm_stacks_put(stacks);
	stacks = NULL;
fail:
	if (pidfd >= 0)
		close(pidfd);
	close_pair(f.in);
	close_pair(f.out);
	close_pair(f.err);
	close_pair(f.status);
	close_pair(f.sync);
	close_pair(f.fail);
	close_pair(f.ws);
	if (wfd >= 0)
		close(wfd);
	if (afd >= 0)
		close(afd);
	al_sb_cgrun_close_tasks(f.cg_tasks);
	free(ctx);
	return al_error_set(err, AL_ERR_UNAVAILABLE, -rc, reason,
			    "sandbox start failed: %s", what);
}
