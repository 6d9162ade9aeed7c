/* The log's writer thread (src/core/log.h): a caller never waits for a
 * stderr nobody reads; lines keep their order, those past the queue's
 * bound are dropped and counted in one line, and a stop waits a bounded
 * time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"

#define LINES 2000

static int saved_stderr = -1;

/* stderr becomes the write end of a pipe; the read end, non-blocking. */
static int stderr_to_pipe(void)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	saved_stderr = dup(2);
	assert_true(saved_stderr >= 0);
	assert_int_equal(dup2(p[1], 2), 2);
	close(p[1]);
	assert_int_equal(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
	return p[0];
}

static void stderr_back(void)
{
	assert_int_equal(dup2(saved_stderr, 2), 2);
	close(saved_stderr);
	saved_stderr = -1;
}

/* Reads what the pipe holds until it stays empty for a while; the text
 * (NUL-terminated) in *out, its length returned. */
static size_t drain(int fd, char **out)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	for (int idle = 0; idle < 50;) {
		if (len + 4096 + 1 > cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		ssize_t n = read(fd, buf + len, 4096);
		if (n > 0) {
			len += (size_t)n;
			idle = 0;
		} else {
			struct timespec ts = {0, 10 * 1000 * 1000};
			nanosleep(&ts, NULL);
			idle++;
		}
	}
	buf[len] = '\0';
	*out = buf;
	return len;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_unread_stderr(void **state)
{
	(void)state;
	int rd = stderr_to_pipe();
	assert_int_equal(al_log_writer_start(16 * 1024), 0);
	assert_int_equal(al_log_writer_start(16 * 1024), -EALREADY);
	/* Far more than the pipe (64 KiB) and the queue hold: without the
	 * writer the first write past the pipe's room would block here. */
	for (int i = 0; i < LINES; i++)
		al_logf(AL_LOG_WARN, NULL, "line %04d of the test", i);
	char *text = NULL;
	drain(rd, &text);
	/* Once read, the writer catches up and says what it dropped. */
	al_logf(AL_LOG_WARN, NULL, "the last line");
	char *rest = NULL;
	drain(rd, &rest);
	assert_true(al_log_writer_stop(2000));
	stderr_back();
	close(rd);

	/* In order, none twice; the dropped ones counted. */
	int seen = 0, last = -1;
	unsigned long long dropped = 0;
	for (char *ln = strtok(text, "\n"); ln != NULL;
	     ln = strtok(NULL, "\n")) {
		int k;
		const char *d = strstr(ln, "dropped=");
		if (d != NULL) {
			dropped += strtoull(d + 8, NULL, 10);
			assert_non_null(strstr(ln, "level=warn"));
			continue;
		}
		const char *m = strstr(ln, "msg=\"line ");
		assert_non_null(m);
		assert_int_equal(sscanf(m, "msg=\"line %d", &k), 1);
		assert_true(k > last);
		last = k;
		seen++;
	}
	assert_true(seen > 0);
	assert_true(seen < LINES);
	assert_non_null(strstr(rest, "the last line"));
	const char *d = strstr(rest, "dropped=");
	if (d != NULL)
		dropped += strtoull(d + 8, NULL, 10);
	assert_int_equal(dropped + (unsigned long long)seen, LINES);
	free(text);
	free(rest);
}

static void test_stop_is_bounded(void **state)
{
	(void)state;
	int rd = stderr_to_pipe();
	assert_int_equal(al_log_writer_start(1024 * 1024), 0);
	for (int i = 0; i < LINES; i++)
		al_logf(AL_LOG_WARN, NULL, "line %04d, never read in time", i);
	double t0 = now_s();
	assert_false(al_log_writer_stop(300));
	double took = now_s() - t0;
	assert_true(took >= 0.25);
	assert_true(took < 5.0);
	/* Read at last: the writer gets through and a second stop joins
	 * it. */
	char *text = NULL;
	drain(rd, &text);
	assert_true(al_log_writer_stop(2000));
	assert_non_null(strstr(text, "line 1999, never read in time"));
	free(text);
	stderr_back();
	close(rd);
	/* No writer: stop has nothing to wait for. */
	assert_true(al_log_writer_stop(0));
}

static void test_flush_before_a_kill(void **state)
{
	(void)state;
	int rd = stderr_to_pipe();
	/* No writer: nothing to wait for. */
	assert_true(al_log_flush(0));
	assert_int_equal(al_log_writer_start(1024 * 1024), 0);
	for (int i = 0; i < 10; i++)
		al_logf(AL_LOG_WARN, NULL, "flushed %d", i);
	assert_true(al_log_flush(2000));
	/* Written already: one read finds the last line, no waiting. */
	char buf[8192];
	ssize_t n = read(rd, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "flushed 9"));
	/* A full pipe: the flush gives up in its time. */
	for (int i = 0; i < LINES; i++)
		al_logf(AL_LOG_WARN, NULL, "line %04d, never read in time", i);
	assert_false(al_log_flush(200));
	char *text = NULL;
	drain(rd, &text);
	free(text);
	assert_true(al_log_writer_stop(2000));
	stderr_back();
	close(rd);
}

static void test_child_writes_its_own(void **state)
{
	(void)state;
	int rd = stderr_to_pipe();
	assert_int_equal(al_log_writer_start(1024 * 1024), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* No writer thread here: the line is written at once. */
		al_logf(AL_LOG_WARN, NULL, "from the child");
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	char *text = NULL;
	drain(rd, &text);
	assert_non_null(strstr(text, "from the child"));
	free(text);
	assert_true(al_log_writer_stop(2000));
	stderr_back();
	close(rd);
}

int main(void)
{
	/* A caller blocked on the full pipe fails the run, not hangs it. */
	alarm(60);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unread_stderr),
		cmocka_unit_test(test_stop_is_bounded),
		cmocka_unit_test(test_flush_before_a_kill),
		cmocka_unit_test(test_child_writes_its_own),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
