/* A cold run's cgroups made ahead and what it leaves removed behind
 * (src/sandbox/cgroups_ahead.h): each set is fresh (its files opened
 * ahead), taken once and then removed; a set given back with a process
 * still in it is emptied and removed all the same; one given back with an
 * init still exiting is removed once the helper has reaped it (and the
 * run's uid given back then), while the next set can be taken; a run
 * directory given back leaves its run id free at once and is removed,
 * and the next run's directory is laid out ahead in its base;
 * the handle's work after a step (the next network namespace) is done
 * by the helper once the step gives its set back;
 * no helper thread is left behind; and cold runs of a provider handle
 * take the sets with their own limits in force (sets are written ahead
 * with the last taker's limits; a taker that wants others writes its
 * own).  Where no cgroup can be made here (not root, nothing delegated)
 * it asserts that nothing is made ahead instead. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <airlock/airlock.h>

#include "cgroup/cgroup.h"
#include "child/rundir.h"
#include "sandbox/cgroups_ahead.h"
#include "sandbox/sandbox.h"
#include "unit_support.h"

static al_sb_cgroups cg;
static const al_provider_ops *ops;
static al_facts *facts;

static int setup(void **state)
{
	(void)state;
	al_sb_cgverdict v;
	al_sb_cgroups_locate(&cg);
	al_sb_cgroups_trial(&cg, &v);
	ops = al_provider_lookup("sandbox");
	return ops == NULL || ops->probe(NULL, &facts, NULL) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	al_facts_free(facts);
	al_sb_cgroups_clear(&cg);
	return 0;
}

/* Every directory of a set, copied (NULL-terminated). */
static void dirs_of(const al_sb_cgrun *run, char *out[AL_CG__N + 2])
{
	int n = 0;
	const char *all[AL_CG__N + 1] = {run->v2_dir};
	for (int i = 0; i < AL_CG__N; i++)
		all[i + 1] = run->v1_dir[i];
	for (int i = 0; i < AL_CG__N + 1; i++) {
		if (all[i] == NULL)
			continue;
		out[n] = strdup(all[i]);
		assert_non_null(out[n]);
		n++;
	}
	out[n] = NULL;
}

static bool all_exist(char *const dirs[])
{
	bool all = dirs[0] != NULL;
	for (int i = 0; dirs[i] != NULL; i++)
		all = all && ut_exists(dirs[i]);
	return all;
}

static bool none_exists(char *const dirs[])
{
	for (int i = 0; dirs[i] != NULL; i++)
		if (ut_exists(dirs[i]))
			return false;
	return true;
}

static void free_dirs(char *dirs[])
{
	for (int i = 0; dirs[i] != NULL; i++)
		free(dirs[i]);
}

static bool read_u64(const char *dir, const char *file, uint64_t *v)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return false;
	unsigned long long x = 0;
	bool ok = fscanf(f, "%llu", &x) == 1;
	fclose(f);
	*v = x;
	return ok;
}

/* A sleeping child placed in every cgroup of the set. */
static pid_t place_sleeper(const al_sb_cgrun *run)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	ut_cgroup_place(run, pid);
	return pid;
}

/* A child placed in every cgroup of the set that exits once *release
 * is closed: an init that reported and is still exiting. */
static pid_t place_exiting(const al_sb_cgrun *run, int *release)
{
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[1]);
		char c;
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	*release = p[1];
	ut_cgroup_place(run, pid);
	return pid;
}

/* The memory and pids limits in force in a set (0 where the controller
 * has no cgroup here). */
static void limits_in(const al_sb_cgrun *run, uint64_t *mem, uint64_t *pids)
{
	*mem = *pids = 0;
	if (cg.ver[AL_CG_MEMORY] == AL_CG_V1)
		assert_true(read_u64(run->v1_dir[AL_CG_MEMORY],
				     "memory.limit_in_bytes", mem));
	else if (cg.ver[AL_CG_MEMORY] == AL_CG_V2)
		assert_true(read_u64(run->v2_dir, "memory.max", mem));
	if (cg.ver[AL_CG_PIDS] != AL_CG_NONE)
		assert_true(read_u64(cg.ver[AL_CG_PIDS] == AL_CG_V1
					     ? run->v1_dir[AL_CG_PIDS]
					     : run->v2_dir,
				     "pids.max", pids));
}

/* The set a helper makes, taken once it is ready (bounded wait: a take
 * counts a step, so it is not polled). */
static al_sb_cg_taken take_made(al_sb_cg_ahead *a, al_sb_cgrun *run,
				const al_sb_cg_limits *want)
{
	unsigned long long taken, missed;
	bool ready = false;
	for (int i = 0; i < 5000 && !ready; i++) {
		al_sb_cg_ahead_counts(a, &taken, &missed, &ready);
		if (!ready)
			usleep(1000);
	}
	return al_sb_cg_ahead_take(a, run, want);
}

static void wait_gone(char *const dirs[])
{
	for (int i = 0; i < 5000 && !none_exists(dirs); i++)
		usleep(1000);
	assert_true(none_exists(dirs));
}

/* A run directory given back is out of its run id's sight at once (the
 * id can name a new one) and removed by the helper. */
static void check_dirs_given_back(al_sb_cg_ahead *a)
{
	char base[] = "/tmp/airlock-ahead-XXXXXX";
	assert_non_null(mkdtemp(base));
	al_rundir rd, again;
	assert_int_equal(al_rundir_create(base, "ahead-dir", &rd, NULL), 0);
	char root[4096];
	snprintf(root, sizeof(root), "%s", rd.root);
	assert_int_equal(al_sb_cg_ahead_give_dir(a, &rd), 0);
	assert_null(rd.root);
	assert_int_equal(al_rundir_create(base, "ahead-dir", &again, NULL), 0);
	assert_string_equal(again.root, root);
	for (int i = 0; i < 5000 && ut_dir_entries(base) != 1; i++)
		usleep(1000);
	assert_int_equal(ut_dir_entries(base), 1);
	assert_int_equal(al_rundir_remove(&again), 0);
	assert_int_equal(rmdir(base), 0);
}

/* A run directory laid out ahead in the base the last run asked for:
 * taken once ready, named for its run by al_rundir_claim; asking for
 * another base drops the one made in the old. */
static void check_dirs_made_ahead(al_sb_cg_ahead *a)
{
	char base[] = "/tmp/airlock-ahead-XXXXXX";
	char other[] = "/tmp/airlock-ahead-XXXXXX";
	assert_non_null(mkdtemp(base));
	assert_non_null(mkdtemp(other));
	al_rundir rd;
	/* the first ask names the base; the helper then makes one there */
	assert_false(al_sb_cg_ahead_take_dir(a, base, &rd));
	al_sb_cg_ahead_refill(a);
	bool got = false;
	for (int i = 0; i < 5000 && !got; i++) {
		got = al_sb_cg_ahead_take_dir(a, base, &rd);
		if (!got)
			usleep(1000);
	}
	assert_true(got);
	assert_non_null(strstr(rd.root, "/.airlock-new-"));
	assert_true(ut_exists(rd.code_dir));
	assert_int_equal(al_rundir_claim(&rd, "ahead-made", NULL), 0);
	char want[4096];
	snprintf(want, sizeof(want), "%s/ahead-made", base);
	assert_string_equal(rd.root, want);
	assert_true(ut_exists(rd.workspace));
	assert_int_equal(al_rundir_remove(&rd), 0);
	/* the next is made in base by the helper a run's start starts;
	 * asking for another base drops it */
	al_sb_cg_ahead_refill(a);
	for (int i = 0; i < 5000 && ut_dir_entries(base) == 0; i++)
		usleep(1000);
	assert_int_equal(ut_dir_entries(base), 1);
	assert_false(al_sb_cg_ahead_take_dir(a, other, &rd));
	al_sb_cg_ahead_refill(a);
	got = false;
	for (int i = 0; i < 5000 && !got; i++) {
		got = al_sb_cg_ahead_take_dir(a, other, &rd);
		if (!got)
			usleep(1000);
	}
	assert_true(got);
	assert_int_equal(strncmp(rd.root, other, strlen(other)), 0);
	for (int i = 0; i < 5000 && ut_dir_entries(base) != 0; i++)
		usleep(1000);
	assert_int_equal(ut_dir_entries(base), 0);
	assert_int_equal(al_rundir_remove(&rd), 0);
	/* what is made after this goes with the handle's clear */
	al_sb_cg_ahead_settle(a);
	assert_int_equal(ut_dir_entries(other), 0);
	assert_int_equal(rmdir(base), 0);
	assert_int_equal(rmdir(other), 0);
}

static atomic_int after_steps;

static void count_step(void *ctx)
{
	atomic_fetch_add((atomic_int *)ctx, 1);
}

static void test_each_set_is_fresh_taken_once_removed_behind(void **state)
{
	(void)state;
	unsigned before = ut_threads();
	al_sb_cg_ahead a;
	al_sb_cgrun run;
	al_rundir rd_none;
	const al_sb_cg_limits want64 = {
		.valid = true, .bits = AL_LIMIT_MEMORY_BYTES | AL_LIMIT_PIDS,
		.memory_bytes = 64ull << 20, .pids = 16};
	const al_sb_cg_limits want32 = {
		.valid = true, .bits = AL_LIMIT_MEMORY_BYTES | AL_LIMIT_PIDS,
		.memory_bytes = 32ull << 20, .pids = 8};
	const al_limits lim64 = {.set = want64.bits,
				 .memory_bytes = want64.memory_bytes,
				 .pids = want64.pids};
	const al_limits lim32 = {.set = want32.bits,
				 .memory_bytes = want32.memory_bytes,
				 .pids = want32.pids};
	al_sb_cg_ahead_init(&a, &cg, ut_any_cgroup(&cg));
	if (!ut_any_cgroup(&cg)) {
		/* nothing can be made: nothing is, nothing is left, and a
		 * run directory given back is removed at once */
		al_sb_cg_ahead_refill(&a);
		assert_int_equal(al_sb_cg_ahead_take(&a, &run, &want64),
				 AL_SB_CG_NONE);
		check_dirs_given_back(&a);
		al_sb_cg_ahead_clear(&a);
		assert_int_equal(ut_threads_back_to(before), before);
		return;
	}
	/* the handle's work after each step goes to the helper */
	al_sb_cg_ahead_after_step(&a, count_step, &after_steps);
	assert_true(al_sb_cg_ahead_enabled(&a));
	/* no taker yet: the first set has no limits; its taker writes its
	 * own, and the counters start at zero, nothing having run in it */
	al_sb_cg_ahead_refill(&a);
	assert_int_equal(take_made(&a, &run, &want64), AL_SB_CG_UNLIMITED);
	char *first[AL_CG__N + 2];
	dirs_of(&run, first);
	assert_true(all_exist(first));
	assert_non_null(run.reads); /* its files were opened ahead */
	assert_int_equal(al_sb_cgrun_limit(&cg, &run, &lim64), 0);
	uint64_t mem = 0, pids = 0, v = 1;
	limits_in(&run, &mem, &pids);
	if (cg.ver[AL_CG_MEMORY] != AL_CG_NONE)
		assert_int_equal(mem, want64.memory_bytes);
	if (cg.ver[AL_CG_PIDS] != AL_CG_NONE)
		assert_int_equal(pids, want64.pids);
	if (cg.ver[AL_CG_MEMORY] == AL_CG_V1) {
		assert_true(read_u64(run.v1_dir[AL_CG_MEMORY],
				     "memory.max_usage_in_bytes", &v));
		assert_int_equal(v, 0);
	}
	/* the step's sandbox started: a helper makes the next set (written
	 * with the last taker's limits) while the step runs, and removes
	 * the step's set once it is given back */
	al_sb_cg_ahead_refill(&a);
	assert_int_equal(al_sb_cg_ahead_give(&a, &run, -1, NULL), 0);
	assert_null(run.v2_dir);
	wait_gone(first);
	for (int i = 0; i < 5000 && atomic_load(&after_steps) == 0; i++)
		usleep(1000);
	assert_int_equal(atomic_load(&after_steps), 1);
	assert_int_equal(take_made(&a, &run, &want64), AL_SB_CG_AS_WANTED);
	char *second[AL_CG__N + 2];
	dirs_of(&run, second);
	assert_true(all_exist(second));
	for (int i = 0; first[i] != NULL; i++)
		for (int j = 0; second[j] != NULL; j++)
			assert_string_not_equal(first[i], second[j]);
	limits_in(&run, &mem, &pids);
	if (cg.ver[AL_CG_MEMORY] != AL_CG_NONE)
		assert_int_equal(mem, want64.memory_bytes);
	if (cg.ver[AL_CG_PIDS] != AL_CG_NONE)
		assert_int_equal(pids, want64.pids);

	/* a set given back with a process in it: killed, emptied and
	 * removed with the rest */
	pid_t pid = place_sleeper(&run);
	assert_int_equal(al_sb_cg_ahead_give(&a, &run, -1, NULL), 0);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	wait_gone(second);
	/* a taker that wants other limits is told so, and writes them */
	assert_int_equal(take_made(&a, &run, &want32), AL_SB_CG_OTHER);
	assert_int_equal(al_sb_cgrun_relimit(&cg, &run, &lim32), 0);
	limits_in(&run, &mem, &pids);
	if (cg.ver[AL_CG_MEMORY] != AL_CG_NONE)
		assert_int_equal(mem, want32.memory_bytes);
	if (cg.ver[AL_CG_PIDS] != AL_CG_NONE)
		assert_int_equal(pids, want32.pids);
	char *third[AL_CG__N + 2];
	dirs_of(&run, third);

	/* given back with an init still exiting: the next set is made and
	 * can be taken while the helper waits for it, and the used one goes
	 * once the helper has reaped it (through its pidfd) */
	int release = -1;
	pid = place_exiting(&run, &release);
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	assert_true(pidfd >= 0);
	/* the run's uid lock goes with it: a pipe's write end stands in,
	 * so its reader sees when it is given back */
	int lock[2];
	assert_int_equal(pipe2(lock, O_CLOEXEC), 0);
	al_sb_uid slot = {.uid = 1, .fd = lock[1]};
	assert_int_equal(al_sb_cg_ahead_give(&a, &run, pidfd, &slot), 0);
	assert_int_equal(slot.fd, -1);
	assert_int_equal(take_made(&a, &run, &want32), AL_SB_CG_AS_WANTED);
	assert_int_equal(kill(pid, 0), 0);
	assert_true(all_exist(third));
	struct pollfd held = {lock[0], POLLIN, 0};
	assert_int_equal(poll(&held, 1, 0), 0);
	close(release);
	wait_gone(third);
	assert_int_equal(poll(&held, 1, 5000), 1);
	assert_true(held.revents & POLLHUP);
	close(lock[0]);
	assert_int_equal(waitpid(pid, &status, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);

	check_dirs_given_back(&a);
	char *fourth[AL_CG__N + 2];
	dirs_of(&run, fourth);
	assert_int_equal(al_sb_cg_ahead_give(&a, &run, -1, NULL), 0);
	check_dirs_made_ahead(&a);
	al_sb_cg_ahead_clear(&a);
	assert_true(none_exists(fourth));
	assert_int_equal(ut_threads_back_to(before), before);
	free_dirs(first);
	free_dirs(second);
	free_dirs(third);
	free_dirs(fourth);

	/* settled (a supervisor): what is held goes now, and nothing is
	 * made or kept from then on */
	al_sb_cg_ahead_init(&a, &cg, true);
	al_sb_cg_ahead_refill(&a);
	al_sb_cg_ahead_settle(&a);
	assert_int_equal(ut_threads_back_to(before), before);
	assert_int_equal(al_sb_cg_ahead_take(&a, &run, &want64),
			 AL_SB_CG_NONE);
	al_sb_cg_ahead_refill(&a);
	assert_int_equal(ut_threads_back_to(before), before);
	al_sb_cg_ahead_clear(&a);

	/* disabled: nothing is made, and a set or a run directory given
	 * back goes at once */
	al_sb_cg_ahead_init(&a, &cg, false);
	assert_false(al_sb_cg_ahead_enabled(&a));
	assert_false(al_sb_cg_ahead_take_dir(&a, "/tmp", &rd_none));
	al_sb_cg_ahead_settle(&a);
	assert_int_equal(al_sb_cg_ahead_take(&a, &run, &want64),
			 AL_SB_CG_NONE);
	char name[64];
	al_sb_cgrun_name(name, sizeof(name), "ahead-off");
	assert_int_equal(al_sb_cgrun_make(&cg, name, &run, NULL), 0);
	char *fifth[AL_CG__N + 2];
	dirs_of(&run, fifth);
	assert_int_equal(al_sb_cg_ahead_give(&a, &run, -1, NULL), 0);
	assert_true(none_exists(fifth));
	free_dirs(fifth);
	check_dirs_given_back(&a);
	assert_int_equal(ut_threads_back_to(before), before);
	al_sb_cg_ahead_clear(&a);
}

static al_result *run_sh(al_provider_handle *h, const char *code,
			 const char *limits)
{
	char text[1024];
	snprintf(text, sizeof(text),
		 "{\"language\": \"sh\", \"code\": \"%s\", \"limits\": %s}",
		 code, limits);
	return ut_execute_json(ops, h, text, "cgroups-ahead");
}

/* Until the helper started after the last run has made the next set
 * (where none can be made: returns at once). */
static void wait_ready(al_provider_handle *h)
{
	if (!ut_any_cgroup(&cg))
		return;
	unsigned long long taken, missed;
	bool ready = false;
	for (int i = 0; i < 5000 && !ready; i++) {
		al_sb_provider_cgroups_stats(h, &taken, &missed, &ready);
		if (!ready)
			usleep(1000);
	}
	assert_true(ready);
}

/* Cold runs take the sets made ahead, each with its own limits: one that
 * stays within them completes, one that goes past the memory limit is
 * killed for it. */
static void test_cold_runs_take_them(void **state)
{
	(void)state;
	if (!facts->available || al_facts_find_language(facts, "sh") == NULL) {
		print_message("skip: the sandbox facts say it is unavailable "
			      "or has no sh\n");
		return;
	}
	al_provider_handle *h = NULL;
	assert_int_equal(ops->ensure(NULL, &h, NULL), 0);
	al_result *r1 = run_sh(h, "true", "{}"); /* none ready yet */
	assert_int_equal(r1->outcome, AL_OUTCOME_COMPLETED);
	wait_ready(h);
	/* a memory limit only where one can be enforced (else the request
	 * is refused before any cgroup is taken) */
	bool memory = cg.ver[AL_CG_MEMORY] != AL_CG_NONE;
	al_result *r2 = run_sh(h, "echo small",
			       memory ? "{\"memory_bytes\": 67108864}" : "{}");
	assert_int_equal(r2->outcome, AL_OUTCOME_COMPLETED);
	wait_ready(h);
	al_result *r3 = NULL;
	if (memory) {
		/* ~100 MB held by one shell variable, in 32 MiB */
		r3 = run_sh(h,
			    "x=$(head -c 100000000 /dev/zero | tr '\\\\0' a); "
			    "echo ${#x}",
			    "{\"memory_bytes\": 33554432}");
		assert_int_equal(r3->outcome, AL_OUTCOME_KILLED);
		assert_string_equal(r3->reason, "memory_limit");
		/* the next set was written with 32 MiB: a run that needs
		 * more and asks for 256 gets its limit raised over it */
		wait_ready(h);
		al_result *r5 = run_sh(
			h,
			"x=$(head -c 60000000 /dev/zero | tr '\\\\0' a); "
			"echo ${#x}",
			"{\"memory_bytes\": 268435456}");
		assert_int_equal(r5->outcome, AL_OUTCOME_COMPLETED);
		assert_string_equal((char *)r5->output[AL_STDOUT].data,
				    "60000000\n");
		al_result_free(r5);
	}
	unsigned long long taken = 0, missed = 0;
	bool ready = false;
	al_sb_provider_cgroups_stats(h, &taken, &missed, &ready);
	if (ut_any_cgroup(&cg)) {
		assert_int_equal(missed, 1);
		assert_int_equal(taken, memory ? 3 : 1);
	} else {
		assert_int_equal(missed, 0);
		assert_int_equal(taken, 0);
	}
	/* a supervisor between runs (settle) keeps none from then on: its
	 * runs' cgroups belong to the durable run's tree */
	al_sandbox_pool_renew(h, 10000);
	al_result *r4 = run_sh(h, "true", "{}");
	assert_int_equal(r4->outcome, AL_OUTCOME_COMPLETED);
	unsigned long long taken_after = 0, missed_after = 0;
	al_sb_provider_cgroups_stats(h, &taken_after, &missed_after, &ready);
	assert_false(ready);
	assert_int_equal(taken_after, taken);
	assert_int_equal(missed_after, missed);
	al_result_free(r4);
	al_result_free(r1);
	al_result_free(r2);
	al_result_free(r3);
	assert_int_equal(ops->release(h, NULL), 0);
}

/* A handle for one run (al_sandbox_one_run): one set is made before the
 * run asks, none after it; no run directory is laid out ahead; what the
 * run gives back is removed behind, and the clear leaves nothing. */
static void test_one_run_makes_one_set(void **state)
{
	(void)state;
	unsigned before = ut_threads();
	al_sb_cg_ahead a;
	al_sb_cgrun run;
	const al_sb_cg_limits want = {
		.valid = true, .bits = AL_LIMIT_PIDS, .pids = 16};
	bool any = ut_any_cgroup(&cg);
	al_sb_cg_ahead_init(&a, &cg, any);
	al_sb_cg_ahead_once(&a);
	al_sb_cg_ahead_refill(&a);
	if (!any) {
		assert_int_equal(al_sb_cg_ahead_take(&a, &run, &want),
				 AL_SB_CG_NONE);
		al_sb_cg_ahead_clear(&a);
		assert_int_equal(ut_threads_back_to(before), before);
		return;
	}
	assert_int_equal(take_made(&a, &run, &want), AL_SB_CG_UNLIMITED);
	char *dirs[AL_CG__N + 2];
	dirs_of(&run, dirs);
	assert_true(all_exist(dirs));
	/* no directory ahead, though a base is named */
	char base[] = "/tmp/airlock-ahead-XXXXXX";
	assert_non_null(mkdtemp(base));
	al_rundir rd;
	assert_false(al_sb_cg_ahead_take_dir(&a, base, &rd));
	/* the run's start: a helper stays for what it gives back, and
	 * makes no other set */
	al_sb_cg_ahead_refill(&a);
	assert_int_equal(al_sb_cg_ahead_give(&a, &run, -1, NULL), 0);
	wait_gone(dirs);
	free_dirs(dirs);
	unsigned long long taken, missed;
	bool ready = true;
	for (int i = 0; i < 200; i++) {
		al_sb_cg_ahead_counts(&a, &taken, &missed, &ready);
		assert_false(ready);
		usleep(1000);
	}
	assert_int_equal(taken, 1);
	assert_int_equal(ut_dir_entries(base), 0);
	/* a second step makes its own */
	assert_int_equal(al_sb_cg_ahead_take(&a, &run, &want), AL_SB_CG_NONE);
	assert_int_equal(al_sb_cg_ahead_give(&a, &run, -1, NULL), 0);
	al_sb_cg_ahead_clear(&a);
	assert_int_equal(ut_threads_back_to(before), before);
	assert_int_equal(rmdir(base), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_set_is_fresh_taken_once_removed_behind),
		cmocka_unit_test(test_cold_runs_take_them),
		cmocka_unit_test(test_one_run_makes_one_set),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
