/* Removing a run's cgroups while its tree is still alive or dying
 * (docs/sandbox.md, "Removal"): al_sb_cgrun_destroy kills what is left,
 * waits until the cgroups are verifiably empty and removes them, in every
 * hierarchy.  Skips, saying why, where no cgroup can be made (not root,
 * nothing delegated). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "unit_support.h"

/* Children forked by the process placed in the run's cgroups: a tree to
 * kill, not a single process. */
#define TREE 40

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

/* A process in every cgroup of the run that forks TREE children, each
 * holding memory it touched, and then sleeps: alive when the removal
 * starts. */
static pid_t start_tree(const al_sb_cgrun *run)
{
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char go;
		/* a failed test ends the tree with itself */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(ready[1]);
		if (read(ready[0], &go, 1) != 1)
			_exit(1);
		for (int i = 0; i < TREE; i++)
			if (fork() == 0) {
				static char mem[1 << 20];
				prctl(PR_SET_PDEATHSIG, SIGKILL);
				for (size_t j = 0; j < sizeof(mem); j += 4096)
					mem[j] = 1;
				pause();
				_exit(0);
			}
		pause();
		_exit(0);
	}
	close(ready[0]);
	/* placed before it forks: its whole tree is in the cgroups */
	if (run->v2_dir != NULL)
		ut_cgroup_add(run->v2_dir, pid);
	for (int i = 0; i < AL_CG__N; i++)
		if (run->v1_dir[i] != NULL)
			ut_cgroup_add(run->v1_dir[i], pid);
	assert_int_equal(write(ready[1], "g", 1), 1);
	close(ready[1]);
	return pid;
}

/* How many processes the run's first cgroup lists. */
static int count_procs(const al_sb_cgrun *run)
{
	const char *dir = run->v2_dir;
	for (int i = 0; dir == NULL && i < AL_CG__N; i++)
		dir = run->v1_dir[i];
	char path[4096];
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return -1;
	int n = 0;
	long pid;
	while (fscanf(f, "%ld", &pid) == 1)
		n++;
	fclose(f);
	return n;
}

static void test_destroy_kills_and_removes_a_live_tree(void **state)
{
	(void)state;
	if (geteuid() != 0 || !ut_any_cgroup(&cg)) {
		print_message("skip: no cgroup can be made here\n");
		skip();
	}
	char name[64];
	al_sb_cgrun_name(name, sizeof(name), "removal");
	al_sb_cgrun run;
	al_limits none = {0};
	assert_int_equal(al_sb_cgrun_create(&cg, name, &none, &run, NULL), 0);
	char *dirs[AL_CG__N + 1];
	int n = 0;
	if (run.v2_dir != NULL)
		dirs[n++] = strdup(run.v2_dir);
	for (int i = 0; i < AL_CG__N; i++)
		if (run.v1_dir[i] != NULL)
			dirs[n++] = strdup(run.v1_dir[i]);
	pid_t pid = start_tree(&run);
	/* the whole tree is there: the removal has something to kill (a
	 * bound only for a fork that never comes) */
	for (int i = 0; i < 60000 && count_procs(&run) < TREE + 1; i++)
		usleep(1000);
	assert_int_equal(count_procs(&run), TREE + 1);

	assert_int_equal(al_sb_cgrun_destroy(&run), 0);
	for (int i = 0; i < n; i++) {
		assert_false(ut_exists(dirs[i]));
		free(dirs[i]);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* An empty run's cgroups go at once, without a wait or a kill. */
static void test_destroy_empty(void **state)
{
	(void)state;
	if (geteuid() != 0 || !ut_any_cgroup(&cg)) {
		print_message("skip: no cgroup can be made here\n");
		skip();
	}
	char name[64];
	al_sb_cgrun_name(name, sizeof(name), "removal-empty");
	al_sb_cgrun run;
	al_limits none = {0};
	assert_int_equal(al_sb_cgrun_create(&cg, name, &none, &run, NULL), 0);
	char *v2 = run.v2_dir != NULL ? strdup(run.v2_dir) : NULL;
	assert_int_equal(al_sb_cgrun_destroy(&run), 0);
	assert_false(ut_exists(v2));
	free(v2);
	/* a second destroy of the cleared run is harmless */
	assert_int_equal(al_sb_cgrun_destroy(&run), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_destroy_kills_and_removes_a_live_tree),
		cmocka_unit_test(test_destroy_empty),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
