/* al_clone3_vm and al_cg_clone3_vm: a child in the caller's memory until
 * its execve (core/clone_vm.h).  Sanitizer builds have none: there the
 * calls must fail with ENOSYS so that callers clone plainly. */
#include <errno.h>
#include <linux/sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "cgroup/cgroup.h"
#include "core/clone_vm.h"

#if defined(__SANITIZE_ADDRESS__) || !defined(__x86_64__)
#define EXPECT_VM 0
#else
#define EXPECT_VM 1
#endif

/* Written by the child, read by the parent once the call returned. */
static struct {
	int marker;
	bool term_blocked;
	pid_t pid;
} seen;

static int child_marks(void *arg)
{
	seen.marker = *(const int *)arg;
	sigset_t now;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, NULL, &now, _NSIG / 8);
	seen.term_blocked = sigismember(&now, SIGTERM) == 1;
	seen.pid = (pid_t)syscall(SYS_getpid);
	_exit(7);
}

static int child_execs(void *arg)
{
	char *const argv[] = {"sh", "-c", "exit 3", NULL};
	char *const envp[] = {NULL};
	(void)arg;
	execve("/bin/sh", argv, envp);
	_exit(127);
}

static struct clone_args plain_args(void)
{
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	ca.exit_signal = SIGCHLD;
	return ca;
}

static _Alignas(16) char stack[64 * 1024];

static void test_child_shares_memory_and_parent_waits(void **state)
{
	(void)state;
	memset(&seen, 0, sizeof(seen));
	struct clone_args ca = plain_args();
	int value = 42;
	pid_t pid = al_clone3_vm(&ca, child_marks, &value, stack, sizeof(stack));
	if (!EXPECT_VM) {
		assert_int_equal(pid, -1);
		assert_int_equal(errno, ENOSYS);
		return;
	}
	assert_true(pid > 0);
	/* the child's writes are ours, and it had ended before we went on */
	assert_int_equal(seen.marker, 42);
	assert_int_equal(seen.pid, pid);
	assert_true(seen.term_blocked);
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 7);
	/* our own mask is as it was */
	sigset_t now;
	sigprocmask(SIG_SETMASK, NULL, &now);
	assert_false(sigismember(&now, SIGTERM));
}

static void test_child_execs(void **state)
{
	(void)state;
	struct clone_args ca = plain_args();
	bool placed = true;
	pid_t pid = al_cg_clone3_vm(&ca, -1, &placed, child_execs, NULL, stack,
				    sizeof(stack));
	assert_false(placed);
	if (!EXPECT_VM) {
		assert_int_equal(pid, -1);
		assert_int_equal(errno, ENOSYS);
		return;
	}
	assert_true(pid > 0);
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 3);
}

static void test_bad_arguments_fail_typed(void **state)
{
	(void)state;
	struct clone_args ca = plain_args();
	ca.flags = CLONE_THREAD; /* without CLONE_SIGHAND: EINVAL */
	pid_t pid = al_clone3_vm(&ca, child_marks, &(int){1}, stack,
				 sizeof(stack));
	assert_int_equal(pid, -1);
	assert_int_equal(errno, EXPECT_VM ? EINVAL : ENOSYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_child_shares_memory_and_parent_waits),
		cmocka_unit_test(test_child_execs),
		cmocka_unit_test(test_bad_arguments_fail_typed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
