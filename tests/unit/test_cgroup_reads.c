/* A run's cgroup files kept open for the reads after the run
 * (al_sb_cgrun_keep_reads, src/cgroup/reads.c): the emptiness check and
 * the usage read through the kept descriptors answer what the kernel
 * says at the time of the read (not at the time of the open), the same
 * as a set read by path; the v1 `tasks` files a child joins the set by
 * are handed out as copies of those kept; and removal closes them.
 * Where no cgroup can be made here (not root, nothing delegated) a set
 * holds none and keeping its reads opens nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "unit_support.h"

static al_sb_cgroups cg;

static int setup(void **state)
{
	(void)state;
	al_sb_cgverdict v;
	al_sb_cgroups_locate(&cg);
	al_sb_cgroups_trial(&cg, &v);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	al_sb_cgroups_clear(&cg);
	return 0;
}

static unsigned open_fds(void)
{
	return ut_dir_entries("/proc/self/fd");
}

/* A child in every cgroup of the set that touches `bytes` of memory,
 * tells us so on *ready, and then waits to be killed. */
static pid_t place_toucher(const al_sb_cgrun *run, size_t bytes)
{
	int go[2], ready[2];
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		char *p = malloc(bytes);
		if (p == NULL)
			_exit(1);
		memset(p, 1, bytes);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(p[bytes / 2]);
	}
	ut_cgroup_place(run, pid);
	assert_int_equal(write(go[1], "g", 1), 1);
	char c;
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(go[0]);
	close(go[1]);
	close(ready[0]);
	close(ready[1]);
	return pid;
}

static void test_kept_reads_answer_at_read_time(void **state)
{
	(void)state;
	unsigned fds_before = open_fds();
	if (!ut_any_cgroup(&cg)) {
		/* nothing can be made here: a set holds no cgroup, keeping
		 * its reads opens nothing, and it reads as empty */
		al_sb_cgrun none;
		char name[64];
		al_sb_cgrun_name(name, sizeof(name), "reads-none");
		assert_int_equal(al_sb_cgrun_make(&cg, name, &none, NULL), 0);
		assert_null(none.v2_dir);
		assert_int_equal(al_sb_cgrun_keep_reads(&none), 0);
		assert_int_equal(open_fds(), fds_before);
		assert_true(al_sb_cgrun_empty(&none));
		assert_int_equal(al_sb_cgrun_destroy(&none), 0);
		assert_int_equal(open_fds(), fds_before);
		return;
	}
	al_sb_cgrun kept, by_path;
	char name[64];
	al_sb_cgrun_name(name, sizeof(name), "reads-kept");
	assert_int_equal(al_sb_cgrun_make(&cg, name, &kept, NULL), 0);
	al_sb_cgrun_name(name, sizeof(name), "reads-path");
	assert_int_equal(al_sb_cgrun_make(&cg, name, &by_path, NULL), 0);
	/* opened while the sets are empty and unused */
	assert_int_equal(al_sb_cgrun_keep_reads(&kept), 0);
	assert_non_null(kept.reads);
	assert_null(by_path.reads);
	assert_true(open_fds() > fds_before + 1);
	assert_true(al_sb_cgrun_empty(&kept));

	pid_t a = place_toucher(&kept, 24u << 20);
	pid_t b = place_toucher(&by_path, 24u << 20);
	/* the kept cgroup.procs lists what is there now */
	assert_false(al_sb_cgrun_empty(&kept));
	assert_true(al_sb_cgrun_empty_but(&kept, a));
	assert_false(al_sb_cgrun_empty_but(&kept, b));
	assert_false(al_sb_cgrun_empty(&by_path));

	kill(a, SIGKILL);
	kill(b, SIGKILL);
	assert_int_equal(waitpid(a, NULL, 0), a);
	assert_int_equal(waitpid(b, NULL, 0), b);
	for (int i = 0; i < 1000 && !(al_sb_cgrun_empty(&kept) &&
				      al_sb_cgrun_empty(&by_path));
	     i++)
		usleep(1000);
	assert_true(al_sb_cgrun_empty(&kept));
	assert_true(al_sb_cgrun_empty(&by_path));

	/* usage read through the kept files: what the run did, as a set
	 * read by path says */
	al_sb_cgusage uk, up;
	al_sb_cgrun_usage(&kept, &uk);
	al_sb_cgrun_usage(&by_path, &up);
	assert_int_equal(uk.have_peak, up.have_peak);
	assert_int_equal(uk.have_cpu, up.have_cpu);
	if (uk.have_peak) {
		assert_true(uk.peak_memory_bytes >= 24u << 20);
		assert_true(up.peak_memory_bytes >= 24u << 20);
	}
	assert_false(uk.oom_killed);
	assert_false(uk.pids_max_hit);
	/* read again: the same answer, not an empty second read */
	al_sb_cgusage again;
	al_sb_cgrun_usage(&kept, &again);
	assert_int_equal(again.have_peak, uk.have_peak);
	assert_int_equal(again.peak_memory_bytes, uk.peak_memory_bytes);

	/* the v1 tasks files, kept too, are handed out as copies a child
	 * joins the set by */
	int tasks[AL_CG__N];
	int n = al_sb_cgrun_open_tasks(&kept, tasks);
	assert_true(n >= 0);
	if (n > 0) {
		int fds_open = (int)open_fds();
		pid_t c = fork();
		assert_true(c >= 0);
		if (c == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (al_sb_cgrun_join_self(tasks) < 0)
				_exit(1);
			pause();
			_exit(0);
		}
		al_sb_cgrun_close_tasks(tasks);
		assert_true((int)open_fds() <= fds_open - n);
		/* within 200 ms: v1's cgroup.procs re-read through one
		 * descriptor would say "empty" for a second */
		bool in = false;
		for (int i = 0; i < 200 && !in; i++) {
			in = !al_sb_cgrun_empty(&kept);
			if (!in)
				usleep(1000);
		}
		assert_true(in);
		kill(c, SIGKILL);
		assert_int_equal(waitpid(c, NULL, 0), c);
		for (int i = 0; i < 1000 && !al_sb_cgrun_empty(&kept); i++)
			usleep(1000);
	}

	assert_int_equal(al_sb_cgrun_destroy(&kept), 0);
	assert_int_equal(al_sb_cgrun_destroy(&by_path), 0);
	assert_null(kept.reads);
	assert_int_equal(open_fds(), fds_before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_reads_answer_at_read_time),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
