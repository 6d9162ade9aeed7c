/* airlock-init of the sandbox provider: pid 1 of a run once its setup is
 * done.
 *
 * The sandbox's init sets the run up in its caller's memory (vfork-style,
 * src/sandbox/launch.c), starts the program and then executes this small
 * static program in its place, so the caller's page tables are neither
 * copied for the init nor write-protected under the caller while the run
 * goes on (docs/performance.md, "The init in its caller's memory").  It
 * runs the shepherd's loop as the namespace's init: reaps everything,
 * forwards SIGTERM, kills every process when the program ends and writes
 * the exit report (the program's wait status, the tree's usage) to the
 * status descriptor.
 *
 * It is embedded in libairlock and executed from a sealed memfd
 * (src/sandbox/init_image.c), never from a path.  Its only input is
 * AL_SANDBOX_INIT=STATUS_FD:PROGRAM_PID in its environment: its argv is
 * just "airlock-init", which is all /proc/1/cmdline shows the run.
 *
 * With AL_SANDBOX_GO=FAIL_FD instead it is a warm member's waiter: the
 * member's program, started in its caller's memory, executes it once its
 * setup is done, and it waits for the member's request in its own
 * (src/sandbox/member_go.c). */
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "child/shepherd.h"
#include "sandbox/launch_proto.h"
#include "sandbox/member_go.h"

/* The waiter's buffers: pages are touched only as far as a header goes. */
static char go_buf[AL_SB_GO_BUF];
static char *go_ptrs[AL_SB_GO_PTRS];

/* A decimal number up to `stop`; -1 when there is none or it overflows. */
static long parse_num(const char **p, char stop)
{
	long v = 0;
	const char *s = *p;
	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > 100000000L)
			return -1;
		v = v * 10 + (*s - '0');
	}
	if (*s != stop)
		return -1;
	*p = s + (stop != '\0');
	return v;
}

int main(void)
{
	const char *go = getenv(AL_SB_GO_ENV);
	if (go != NULL) {
		long fail_fd = parse_num(&go, '\0');
		if (fail_fd < 3)
			return 126;
		al_sb_member_go((int)fail_fd, go_buf, sizeof(go_buf), go_ptrs,
				AL_SB_GO_PTRS);
	}
	/* Only ever pid 1 of a run's pid namespace: the loop's tree kill is
	 * kill(-1), which anywhere else reaches every process it may. */
	if (getpid() != 1)
		return 126;
	/* Not dumpable before anything else: the program runs as the same
	 * uid (the image is also exec-only, which makes the kernel start it
	 * so: init_image.c). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return 126;
	prctl(PR_SET_NAME, "airlock-init", 0, 0, 0);
	const char *spec = getenv("AL_SANDBOX_INIT");
	if (spec == NULL)
		return 126;
	long status_fd = parse_num(&spec, ':');
	long program = status_fd >= 0 ? parse_num(&spec, '\0') : -1;
	if (status_fd < 3 || program < 2)
		return 126;
	/* The launch held every signal blocked; the loop waits for its own
	 * set and nothing else stays held. */
	sigset_t set;
	al_shepherd_block_signals(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
	return al_shepherd_loop((pid_t)program, (int)status_fd, true);
}
