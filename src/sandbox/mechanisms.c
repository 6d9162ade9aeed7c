/* The mechanism trial.  See mechanisms.h. */
#include "sandbox/mechanisms.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/landlock.h"

enum {
	M_USERNS = 1 << 0,
	M_NS = 1 << 1,
	M_NNP = 1 << 2,
	M_CAPS = 1 << 3,
	M_LANDLOCK = 1 << 4,
	M_SECCOMP = 1 << 5,
};

/* In the forked child (a real fork: glibc knows it has one thread). */
static int trial(bool privileged, int cap_last, int landlock_abi,
		 const al_sb_filter *filter)
{
	int bits = 0;
	int ns = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
		 CLONE_NEWUTS | CLONE_NEWCGROUP;
	if (privileged) {
		if (unshare(ns) == 0)
			bits |= M_NS;
		if (setresgid(65534, 65534, 65534) == 0 &&
		    setresuid(65534, 65534, 65534) == 0 &&
		    unshare(CLONE_NEWUSER) == 0)
			bits |= M_USERNS;
	} else if (unshare(CLONE_NEWUSER | ns) == 0) {
		bits |= M_USERNS | M_NS;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
		bits |= M_NNP;
	int ok = 1;
	for (int c = 0; c <= cap_last; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			ok = 0;
	if (ok && prctl(PR_CAPBSET_READ, 0, 0, 0, 0) == 0)
		bits |= M_CAPS;
	al_sb_landlock_spec ll = {.abi = landlock_abi};
	if (landlock_abi > 0 && al_sb_landlock_apply(&ll) == 0)
		bits |= M_LANDLOCK;
	if (filter != NULL && al_sb_filter_load(filter) == 0 &&
	    syscall(SYS_unshare, CLONE_NEWUTS) < 0 && errno == EPERM)
		bits |= M_SECCOMP;
	return bits;
}

void al_sb_try_mechanisms(bool privileged, int cap_last, int landlock_abi,
			  const al_sb_filter *filter, al_sb_mechanisms *m)
{
	memset(m, 0, sizeof(*m));
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		int bits = trial(privileged, cap_last, landlock_abi, filter);
		ssize_t w = write(p[1], &bits, sizeof(bits));
		_exit(w == (ssize_t)sizeof(bits) ? 0 : 1);
	}
	close(p[1]);
	int bits = 0;
	if (pid > 0) {
		if (read(p[0], &bits, sizeof(bits)) != (ssize_t)sizeof(bits))
			bits = 0;
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	close(p[0]);
	m->user_namespaces = bits & M_USERNS;
	m->namespaces = bits & M_NS;
	m->no_new_privs = bits & M_NNP;
	m->caps_dropped = bits & M_CAPS;
	m->landlock = bits & M_LANDLOCK;
	m->seccomp = bits & M_SECCOMP;
}
