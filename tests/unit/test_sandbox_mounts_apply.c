/* A mount plan applied (src/sandbox/mounts.c, al_sb_mounts_apply): the
 * directory a step made or found is not made again by the next step, a
 * mount that hides it makes the next step under it make it afresh in the
 * mounted file system, and a file's mount point is a file.  The plan runs
 * in a child in a mount namespace of its own (a user namespace too where
 * this process is not root); it skips, saying why, only where the
 * sandbox provider's facts say it is unavailable. */
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <airlock/airlock.h>

#include "core/util.h"
#include "sandbox/mounts.h"
#include "unit_support.h"

/* Child exit codes: which check failed. */
enum {
	OK = 0,
	NO_NS = 90,
	APPLY_FAILED,
	HIDDEN_FILE_SEEN,
	REMADE_FILE_MISSING,
	LINK_WRONG,
	NESTED_FILE_WRONG,
	BIND_MISSING,
	ROOT_WRITABLE,
	BESIDE_FILE_WRONG,
	FILE_BIND_MISSING,
};

static bool file_says(const char *path, const char *want)
{
	char buf[64];
	return al_read_head(path, buf, sizeof(buf)) > 0 &&
	       strcmp(buf, want) == 0;
}

static int enter_mount_ns(void)
{
	if (unshare(CLONE_NEWNS) == 0)
		return 0;
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return -1;
	return 0;
}

static int apply_and_check(const char *staging)
{
	al_sb_mount_op ops[] = {
		/* /a and /a/b made for the file; /a/b remembered */
		{.op = AL_MOP_FILE, .src = "one", .dst = "/a/b/f1"},
		{.op = AL_MOP_FILE, .src = "beside", .dst = "/a/b/f0"},
		/* a tmpfs over /a hides /a/b and f1 */
		{.op = AL_MOP_TMPFS, .src = "size=64k", .dst = "/a"},
		/* so /a/b is made again, inside the tmpfs */
		{.op = AL_MOP_FILE, .src = "two", .dst = "/a/b/f2"},
		{.op = AL_MOP_SYMLINK, .src = "f2", .dst = "/a/b/l"},
		{.op = AL_MOP_MKDIR, .dst = "/a/c/d"},
		{.op = AL_MOP_FILE, .src = "three", .dst = "/a/c/d/e/f3"},
		{.op = AL_MOP_BIND, .src = "/usr", .dst = "/a/c/usr"},
		/* a file's mount point is made as a file */
		{.op = AL_MOP_BIND, .src = "/dev/null", .dst = "/a/b/null",
		 .dev = true},
		/* a sibling of a remembered directory's parent */
		{.op = AL_MOP_FILE, .src = "four", .dst = "/a/cd/f4"},
	};
	al_sb_mount_plan plan = {.ops = ops, .n = sizeof(ops) / sizeof(ops[0])};
	int failed = -1;
	if (al_sb_mounts_apply(&plan, staging, &failed) < 0) {
		fprintf(stderr, "apply failed at op %d: %s\n", failed,
			strerror(errno));
		return APPLY_FAILED;
	}
	struct stat st;
	if (stat("/a/b/f1", &st) == 0 || stat("/a/b/f0", &st) == 0)
		return HIDDEN_FILE_SEEN;
	if (!file_says("/a/b/f2", "two"))
		return REMADE_FILE_MISSING;
	char link[16] = {0};
	if (readlink("/a/b/l", link, sizeof(link) - 1) != 2 ||
	    strcmp(link, "f2") != 0)
		return LINK_WRONG;
	if (!file_says("/a/c/d/e/f3", "three"))
		return NESTED_FILE_WRONG;
	if (stat("/a/c/usr/bin", &st) < 0 || !S_ISDIR(st.st_mode))
		return BIND_MISSING;
	if (!file_says("/a/cd/f4", "four"))
		return BESIDE_FILE_WRONG;
	if (stat("/a/b/null", &st) < 0 || !S_ISCHR(st.st_mode))
		return FILE_BIND_MISSING;
	if (mkdir("/new", 0755) == 0 || errno != EROFS)
		return ROOT_WRITABLE;
	return OK;
}

/* The sandbox provider's probed facts: where it is available, a mount
 * namespace can be made here, and failing to make one is a failure. */
static bool sandbox_available(void)
{
	const al_provider_ops *ops = NULL;
	al_facts *facts = NULL;
	bool available = ut_probe_whole("sandbox", &ops, &facts) == 0 &&
			 facts->available;
	al_facts_free(facts);
	return available;
}

static void test_remembered_dirs_and_hiding_mounts(void **state)
{
	(void)state;
	if (!sandbox_available()) {
		print_message("skip: the sandbox facts say it is unavailable "
			      "here (no namespaces to mount in)\n");
		return;
	}
	char staging[] = "/tmp/al-mounts-apply.XXXXXX";
	assert_non_null(mkdtemp(staging));
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(enter_mount_ns() < 0 ? NO_NS : apply_and_check(staging));
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	rmdir(staging);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_remembered_dirs_and_hiding_mounts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
