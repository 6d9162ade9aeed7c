/* The cgroup mount table read once and again after a change
 * (src/cgroup/mount_table.h): a cgroup file system mounted or unmounted
 * in the namespace is seen by the next look, and a forked child's look
 * does not take the parent's notice of a change.  Runs in a private mount
 * namespace of its own (within a user namespace when not root). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "cgroup/mount_table.h"

static char dir[64];
static bool have_ns;

struct seen {
	unsigned v2;
	bool ours; /* a cgroup2 mount at dir */
};

static void count(const al_cg_mount *m, void *ctx)
{
	struct seen *s = ctx;
	if (!m->v2)
		return;
	s->v2++;
	if (strcmp(m->mnt, dir) == 0)
		s->ours = true;
}

static struct seen look(void)
{
	struct seen s = {0};
	al_cg_mounts_each(count, &s);
	return s;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/al-cgmounts-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	/* Root: a mount namespace of our own.  Otherwise with a user and
	 * cgroup namespace too, which lets an unprivileged user mount
	 * cgroup2 in it. */
	have_ns = (unshare(CLONE_NEWNS) == 0 ||
		   unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWCGROUP) ==
			   0) &&
		  mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) == 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	(void)umount2(dir, MNT_DETACH);
	rmdir(dir);
	return 0;
}

static bool mount_cgroup2(void)
{
	return mount("none", dir, "cgroup2", 0, NULL) == 0;
}

static void test_a_change_is_seen(void **state)
{
	(void)state;
	if (!have_ns)
		fail_msg("no mount namespace of our own (%s)", strerror(errno));
	struct seen before = look();
	assert_false(before.ours);
	/* unchanged: the same table */
	struct seen again = look();
	assert_int_equal(again.v2, before.v2);

	if (!mount_cgroup2())
		fail_msg("cgroup2 cannot be mounted (%s)", strerror(errno));
	struct seen mounted = look();
	assert_true(mounted.ours);
	assert_int_equal(mounted.v2, before.v2 + 1);

	assert_int_equal(umount2(dir, 0), 0);
	struct seen gone = look();
	assert_false(gone.ours);
	assert_int_equal(gone.v2, before.v2);
}

/* A child shares the parent's open mountinfo: were it to poll that, it
 * would take the notice the parent's next look needs. */
static void test_a_child_leaves_the_parent_its_notice(void **state)
{
	(void)state;
	if (!have_ns)
		fail_msg("no mount namespace of our own");
	struct seen before = look();
	assert_false(before.ours);
	if (!mount_cgroup2())
		fail_msg("cgroup2 cannot be mounted (%s)", strerror(errno));
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct seen child = look();
		_exit(child.ours ? 0 : 1);
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	struct seen parent = look();
	assert_true(parent.ours);
	assert_int_equal(umount2(dir, 0), 0);
	assert_false(look().ours);
}

/* The located cgroups follow the table. */
static void test_locate_uses_it(void **state)
{
	(void)state;
	al_sb_cgroups a, b;
	al_sb_cgroups_locate(&a);
	al_sb_cgroups_locate(&b);
	assert_true((a.v2_base == NULL) == (b.v2_base == NULL));
	if (a.v2_base != NULL)
		assert_string_equal(a.v2_base, b.v2_base);
	for (int i = 0; i < AL_CG__N; i++) {
		assert_true((a.v1_base[i] == NULL) == (b.v1_base[i] == NULL));
		if (a.v1_base[i] != NULL)
			assert_string_equal(a.v1_base[i], b.v1_base[i]);
	}
	al_sb_cgroups_clear(&a);
	al_sb_cgroups_clear(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_change_is_seen),
		cmocka_unit_test(test_a_child_leaves_the_parent_its_notice),
		cmocka_unit_test(test_locate_uses_it),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
