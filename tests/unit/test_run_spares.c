/* Run directories made ahead (src/server/run_spares.c): a spare taken is a
 * run directory with its first entries, an id in use or an invalid one
 * leaves the spare where it was, spares that cannot cross to runs/ are
 * given up, and a start removes a gone daemon's spares but not a live
 * one's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "server/run_spares.h"
#include "supervisor/run_records.h"

typedef struct fixture {
	char dir[64];
	int state_fd;
	int runs_fd;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/al-spares-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	f->state_fd = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->state_fd >= 0);
	assert_int_equal(al_runs_dir_open(f->dir, &f->runs_fd), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	char cmd[128];
	close(f->runs_fd);
	close(f->state_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static bool exists_at(int dirfd, const char *path)
{
	struct stat st;
	return fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Waits (bounded) until the epoch's slot k holds a whole spare (the
 * store made ahead is its last entry). */
static void wait_ready(fixture *f, uint64_t epoch, unsigned k)
{
	char p[96];
	snprintf(p, sizeof(p), AL_SPARE_RUNS_DIR "/%llu/%u/run/.artifacts",
		 (unsigned long long)epoch, k);
	for (int i = 0; i < 2000 && !exists_at(f->state_fd, p); i++) {
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	assert_true(exists_at(f->state_fd, p));
}

/* Takes until a spare comes (the maker refills in the background). */
static int take_soon(al_run_spares *s, const char *id)
{
	int rc = -EAGAIN;
	for (int i = 0; i < 2000 && rc == -EAGAIN; i++) {
		rc = al_run_spares_take(s, id);
		if (rc == -EAGAIN) {
			struct timespec ts = {0, 5 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	return rc;
}

static void test_taken_as_a_run_directory(void **state)
{
	fixture *f = *state;
	al_run_spares *s = NULL;
	unsigned long long taken, missed;

	assert_int_equal(al_run_spares_start(f->state_fd, f->runs_fd, 7, 1, &s),
			 0);
	assert_non_null(s);
	wait_ready(f, 7, 0);
	/* the files are there before the maker has counted the spare ready */
	assert_int_equal(take_soon(s, "run-1"), 0);
	static const char *const entries[] = {
		"run-1/inbox", "run-1/acks", "run-1/" AL_RF_RESERVE,
		"run-1/" AL_RF_LOG, "run-1/.blank.0", "run-1/.blank.2"};
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		assert_true(exists_at(f->runs_fd, entries[i]));
	struct stat st;
	assert_int_equal(fstatat(f->runs_fd, "run-1", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(fstatat(f->runs_fd, "run-1/inbox", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(fstatat(f->runs_fd, "run-1/" AL_RF_RESERVE, &st, 0),
			 0);
	assert_int_equal(st.st_size, AL_RF_RESERVE_BYTES);

	/* An id in use: refused, and the next spare stays for another. */
	wait_ready(f, 7, 0);
	assert_int_equal(take_soon(s, "run-1"), -EEXIST);
	assert_false(exists_at(f->runs_fd, "run-1/run"));
	/* An invalid id never moves anything. */
	assert_int_equal(al_run_spares_take(s, "../x"), -EINVAL);
	assert_int_equal(al_run_spares_take(s, ""), -EINVAL);
	assert_int_equal(take_soon(s, "run-2"), 0);
	assert_true(exists_at(f->runs_fd, "run-2/acks"));

	al_run_spares_counts(s, &taken, &missed);
	assert_int_equal(taken, 2);
	al_run_spares_stop(s);

	/* None asked for: nothing started, nothing to take. */
	assert_int_equal(al_run_spares_start(f->state_fd, f->runs_fd, 8, 0, &s),
			 0);
	assert_null(s);
	assert_int_equal(al_run_spares_take(NULL, "run-3"), -EAGAIN);
	assert_int_equal(al_run_spares_start(f->state_fd, f->runs_fd, 8,
					     AL_RUN_SPARES_MAX + 1, &s),
			 -EINVAL);
}

static void test_another_file_system_gives_them_up(void **state)
{
	fixture *f = *state;
	/* /dev/shm is a tmpfs of its own whatever /tmp is (Debian mounts
	 * it at boot; a tmpfs /tmp is another instance). */
	char other[64];
	snprintf(other, sizeof(other), "/dev/shm/al-spares-XXXXXX");
	assert_non_null(mkdtemp(other));
	int other_fd = open(other, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(other_fd >= 0);
	struct stat a, b;
	assert_int_equal(fstat(other_fd, &a), 0);
	assert_int_equal(fstat(f->state_fd, &b), 0);
	assert_true(a.st_dev != b.st_dev);
	al_run_spares *s = NULL;
	assert_int_equal(al_run_spares_start(f->state_fd, other_fd, 3, 1, &s),
			 0);
	wait_ready(f, 3, 0);
	assert_int_equal(al_run_spares_take(s, "run-x"), -EAGAIN);
	assert_false(exists_at(other_fd, "run-x"));
	/* given up for good: no further attempt */
	assert_int_equal(al_run_spares_take(s, "run-y"), -EAGAIN);
	unsigned long long taken, missed;
	al_run_spares_counts(s, &taken, &missed);
	assert_int_equal(taken, 0);
	assert_int_equal(missed, 2);
	al_run_spares_stop(s);
	close(other_fd);
	assert_int_equal(rmdir(other), 0);
}

static void test_a_start_removes_only_what_is_not_held(void **state)
{
	fixture *f = *state;
	al_run_spares *s = NULL;

	assert_int_equal(al_run_spares_start(f->state_fd, f->runs_fd, 1, 1, &s),
			 0);
	wait_ready(f, 1, 0);
	al_run_spares_stop(s);
	/* Another daemon's, held while it lives. */
	assert_int_equal(mkdirat(f->state_fd, AL_SPARE_RUNS_DIR "/9", 0700), 0);
	int held = openat(f->state_fd, AL_SPARE_RUNS_DIR "/9",
			  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(held >= 0);
	assert_int_equal(flock(held, LOCK_EX | LOCK_NB), 0);

	assert_int_equal(al_run_spares_start(f->state_fd, f->runs_fd, 2, 1, &s),
			 0);
	assert_false(exists_at(f->state_fd, AL_SPARE_RUNS_DIR "/1"));
	assert_true(exists_at(f->state_fd, AL_SPARE_RUNS_DIR "/9"));
	assert_true(exists_at(f->state_fd, AL_SPARE_RUNS_DIR "/2"));
	al_run_spares_stop(s);
	close(held);

	assert_int_equal(al_run_spares_start(f->state_fd, f->runs_fd, 3, 1, &s),
			 0);
	assert_false(exists_at(f->state_fd, AL_SPARE_RUNS_DIR "/9"));
	assert_false(exists_at(f->state_fd, AL_SPARE_RUNS_DIR "/2"));
	al_run_spares_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_taken_as_a_run_directory,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_another_file_system_gives_them_up, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_a_start_removes_only_what_is_not_held, setup,
			teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
