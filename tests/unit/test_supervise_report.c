/* The supervision loop ending on the shepherd/init's report
 * (src/child/supervise.h, end_at_report): with a valid report and the
 * output pipes closed it returns while the process is still there, hands
 * its pidfd to the caller, and al_child_reap reaps it; a report that is
 * not valid ends the run as before (the process waited for and reaped,
 * the run lost). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child/supervise.h"

static int signal_pid(void *ctx, int sig)
{
	pid_t pid = *(pid_t *)ctx;
	return kill(pid, sig) < 0 ? -errno : 0;
}

/* A stand-in for an init: writes "hi" and closes its output, writes a
 * report (valid or not), then stays until *release is closed. */
static pid_t start_reporter(al_child *c, bool valid, int *release,
			    pid_t *pid_slot)
{
	int out[2], err[2], st[2], rel[2];
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	assert_int_equal(pipe2(err, O_CLOEXEC), 0);
	assert_int_equal(pipe2(st, O_CLOEXEC), 0);
	assert_int_equal(pipe2(rel, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(out[0]);
		close(err[0]);
		close(st[0]);
		close(rel[1]);
		if (write(out[1], "hi", 2) != 2)
			_exit(1);
		close(out[1]);
		close(err[1]);
		al_exit_report rep = {
			.magic = valid ? AL_EXIT_REPORT_MAGIC : 0x1234u,
			.wait_status = 0,
		};
		if (write(st[1], &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
			_exit(1);
		char ch;
		while (read(rel[0], &ch, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(out[1]);
	close(err[1]);
	close(st[1]);
	close(rel[0]);
	*release = rel[1];
	*pid_slot = pid;
	*c = (al_child){
		.pid = pid,
		.pidfd = (int)syscall(SYS_pidfd_open, pid, 0),
		.stdin_fd = -1,
		.stdout_fd = out[0],
		.stderr_fd = err[0],
		.status_fd = st[0],
		.signal_tree = signal_pid,
		.signal_ctx = pid_slot,
	};
	assert_true(c->pidfd >= 0);
	return pid;
}

static al_supervise_opts ending_on_report(void)
{
	return (al_supervise_opts){.output_cap = 1024,
				   .wall_ms = 20000,
				   .grace_ms = 100,
				   .end_at_report = true};
}

static void test_ends_on_a_valid_report(void **state)
{
	(void)state;
	al_child c;
	int release = -1;
	pid_t slot;
	pid_t pid = start_reporter(&c, true, &release, &slot);
	al_supervise_opts o = ending_on_report();
	al_supervise_result r;
	assert_int_equal(al_supervise(&c, &o, &r, NULL), 0);
	assert_true(r.init_exiting);
	assert_true(r.have_report);
	assert_int_equal(r.end, AL_END_EXITED);
	assert_int_equal(r.output[0].len, 2);
	assert_memory_equal(r.output[0].data, "hi", 2);
	/* still there, and left to the caller */
	assert_int_equal(kill(pid, 0), 0);
	assert_int_equal(c.pid, pid);
	assert_true(c.pidfd >= 0);
	assert_int_equal(c.status_fd, -1);
	assert_int_equal(c.stdout_fd, -1);
	close(release);
	al_child_reap(c.pidfd);
	int status;
	assert_int_equal(waitpid(pid, &status, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	al_supervise_result_clear(&r);
}

static void test_an_invalid_report_is_waited_for(void **state)
{
	(void)state;
	al_child c;
	int release = -1;
	pid_t slot;
	pid_t pid = start_reporter(&c, false, &release, &slot);
	/* it exits at once, so the loop's wait ends */
	close(release);
	al_supervise_opts o = ending_on_report();
	al_supervise_result r;
	assert_int_equal(al_supervise(&c, &o, &r, NULL), 0);
	assert_false(r.init_exiting);
	assert_false(r.have_report);
	assert_int_equal(r.end, AL_END_LOST);
	assert_int_equal(c.pid, -1);
	assert_int_equal(c.pidfd, -1);
	int status;
	assert_int_equal(waitpid(pid, &status, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	al_supervise_result_clear(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ends_on_a_valid_report),
		cmocka_unit_test(test_an_invalid_report_is_waited_for),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
