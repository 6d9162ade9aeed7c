/* The sandbox's airlock-init as a sealed memfd (sandbox/init_image.h) and
 * the program in it (src/sbinit/main.c): the descriptor is exec-only and
 * cannot change; as pid 1 of a pid namespace it supervises the program it
 * is given and reports its status; anywhere else it refuses to start (its
 * tree kill would be kill(-1)).  The namespace cases run in a pid
 * namespace of their own and skip, saying why, only where the sandbox
 * provider's probed facts say it is unavailable. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <airlock/airlock.h>

#include "child/supervise.h"
#include "sandbox/init_image.h"

#define SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

static al_facts *facts;

static int setup(void **state)
{
	(void)state;
	const al_provider_ops *ops = al_provider_lookup("sandbox");
	return ops == NULL || ops->probe(NULL, &facts, NULL) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	al_facts_free(facts);
	return 0;
}

static void test_sealed_and_exec_only(void **state)
{
	(void)state;
	int fd = al_sb_init_image_fd();
	assert_true(fd >= 3);
	assert_int_equal(al_sb_init_image_fd(), fd);
	assert_int_equal(fcntl(fd, F_GET_SEALS), SEALS);
	assert_int_equal(fcntl(fd, F_GETFD), FD_CLOEXEC);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0111);
	assert_int_equal((uint64_t)st.st_size, al_sb_init_image_bytes);
	/* its bytes are the embedded program's, and stay so */
	unsigned char head[4];
	assert_int_equal(pread(fd, head, 4, 0), 4);
	assert_memory_equal(head, "\177ELF", 4);
	assert_memory_equal(al_sb_init_image, "\177ELF", 4);
	assert_int_equal(pwrite(fd, "X", 1, 0), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(fd, 0), -1);
}

/* A caller that closed it behind our back gets a new one, not a number
 * that may name another file. */
static void test_made_again_when_closed(void **state)
{
	(void)state;
	int fd = al_sb_init_image_fd();
	assert_true(fd >= 0);
	assert_int_equal(close(fd), 0);
	/* the number taken by another file (a lower one may be free too) */
	int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(null_fd >= 0);
	int other = null_fd;
	if (null_fd != fd) {
		other = dup3(null_fd, fd, O_CLOEXEC);
		close(null_fd);
	}
	assert_int_equal(other, fd);
	int again = al_sb_init_image_fd();
	assert_true(again >= 0);
	assert_int_not_equal(again, other);
	assert_int_equal(fcntl(again, F_GET_SEALS), SEALS);
	close(other);
}

/* Executes the image as launch.c does: its only input in the
 * environment.  Returns only when execveat failed. */
static void exec_image(int image, int status_fd, pid_t program)
{
	char env[64];
	snprintf(env, sizeof(env), "AL_SANDBOX_INIT=%d:%d", status_fd,
		 (int)program);
	char *const argv[] = {"airlock-init", NULL};
	char *const envp[] = {env, NULL};
	syscall(SYS_execveat, image, "", argv, envp, AT_EMPTY_PATH);
}

/* Runs the image in a new pid namespace: as pid 1 supervising a program
 * that exits with 7 (pid1 true), or as pid 2 (pid1 false).  Returns the
 * image's exit status; *rep: what it reported.  Unprivileged, the pid
 * namespace comes with a user namespace, as the sandbox makes it. */
static int run_image(bool pid1, al_exit_report *rep)
{
	int image = al_sb_init_image_fd();
	assert_true(image >= 0);
	int status_pipe[2];
	assert_int_equal(pipe(status_pipe), 0); /* inherited across exec */
	pid_t outer = fork();
	assert_true(outer >= 0);
	if (outer == 0) {
		close(status_pipe[0]);
		if (unshare(CLONE_NEWPID |
			    (geteuid() == 0 ? 0 : CLONE_NEWUSER)) < 0)
			_exit(98);
		pid_t init = fork();
		if (init < 0)
			_exit(98);
		if (init == 0) {
			/* pid 1 here */
			pid_t prog = fork();
			if (prog < 0)
				_exit(98);
			if (prog == 0) {
				if (pid1)
					execl("/bin/sh", "sh", "-c", "exit 7",
					      (char *)NULL);
				/* pid 2: the image itself, which must refuse */
				exec_image(image, status_pipe[1], getpid());
				_exit(97);
			}
			if (!pid1) {
				int st = 0;
				waitpid(prog, &st, 0);
				_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 96);
			}
			exec_image(image, status_pipe[1], prog);
			_exit(97);
		}
		int st = 0;
		waitpid(init, &st, 0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 96);
	}
	close(status_pipe[1]);
	memset(rep, 0, sizeof(*rep));
	ssize_t n = read(status_pipe[0], rep, sizeof(*rep));
	close(status_pipe[0]);
	int st = 0;
	assert_int_equal(waitpid(outer, &st, 0), outer);
	assert_true(WIFEXITED(st));
	if (pid1)
		assert_int_equal(n, (ssize_t)sizeof(*rep));
	else
		assert_int_equal(n, 0);
	return WEXITSTATUS(st);
}

/* run_image, or a skip where the sandbox's facts say it cannot run */
static int run_image_here(bool pid1, al_exit_report *rep)
{
	if (!facts->available) {
		print_message("skip: sandbox unavailable: %s\n",
			      facts->unavailable_reason);
		skip();
	}
	return run_image(pid1, rep);
}

static void test_pid1_supervises_and_reports(void **state)
{
	(void)state;
	al_exit_report rep;
	assert_int_equal(run_image_here(true, &rep), 0);
	assert_int_equal(rep.magic, AL_EXIT_REPORT_MAGIC);
	assert_true(WIFEXITED(rep.wait_status));
	assert_int_equal(WEXITSTATUS(rep.wait_status), 7);
}

static void test_refuses_unless_pid1(void **state)
{
	(void)state;
	al_exit_report rep;
	assert_int_equal(run_image_here(false, &rep), 126);
}

int main(void)
{
	/* a broken image would wait for a program that never ends */
	alarm(60);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sealed_and_exec_only),
		cmocka_unit_test(test_made_again_when_closed),
		cmocka_unit_test(test_pid1_supervises_and_reports),
		cmocka_unit_test(test_refuses_unless_pid1),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
