/* PATH lookups remembered while PATH's directories are unchanged: a
 * repeated lookup searches no more, and every change that alters an
 * answer (a program created, the answer made non-executable, removed,
 * renamed; a missing directory appearing) is seen by the very next lookup
 * (within a hold: by the first after it); so is al_path_find's answer
 * through the memo. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lang/locate.h"
#include "lang/path_memo.h"

static char root[64];
static char dir_a[PATH_MAX], dir_b[PATH_MAX], dir_c[PATH_MAX];
static char path_env[PATH_MAX * 3 + 4];
static int searches;

/* The real search, counted. */
static int counted(const char *penv, const char *name, char **out)
{
	char buf[PATH_MAX * 3 + 4];
	searches++;
	*out = NULL;
	snprintf(buf, sizeof(buf), "%s", penv);
	for (char *save = NULL, *d = strtok_r(buf, ":", &save); d;
	     d = strtok_r(NULL, ":", &save)) {
		char cand[PATH_MAX * 2];
		struct stat st;
		snprintf(cand, sizeof(cand), "%s/%s", d, name);
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(cand, X_OK) == 0) {
			*out = strdup(cand);
			return *out ? 0 : -ENOMEM;
		}
	}
	return -ENOENT;
}

static void make_tool(const char *dir, mode_t mode)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s/tool", dir);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "#!/bin/sh\n", 10), 10);
	close(fd);
	assert_int_equal(chmod(p, mode), 0);
}

static void tool_path(const char *dir, char *out, size_t n)
{
	snprintf(out, n, "%s/tool", dir);
}

/* The memo's answer for "tool": its path, or NULL when absent. */
static char *find(void)
{
	char *out = NULL;
	int rc = al_path_memo_find(path_env, "tool", counted, &out);
	if (rc == -ENOENT)
		assert_null(out);
	else
		assert_int_equal(rc, 0);
	return out;
}

static void expect(const char *dir)
{
	char *got = find();
	if (dir == NULL) {
		assert_null(got);
		return;
	}
	char want[PATH_MAX * 2];
	tool_path(dir, want, sizeof(want));
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/al-pathmemo-XXXXXX");
	if (mkdtemp(root) == NULL)
		return -1;
	snprintf(dir_a, sizeof(dir_a), "%s/a", root);
	snprintf(dir_b, sizeof(dir_b), "%s/b", root);
	snprintf(dir_c, sizeof(dir_c), "%s/c", root); /* made later */
	snprintf(path_env, sizeof(path_env), "%s:%s:%s", dir_c, dir_a, dir_b);
	return mkdir(dir_a, 0755) | mkdir(dir_b, 0755);
}

static int teardown(void **state)
{
	(void)state;
	al_path_memo_reset();
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd);
}

static void test_repeats_do_not_search(void **state)
{
	(void)state;
	al_path_memo_reset();
	searches = 0;
	expect(NULL);
	expect(NULL);
	assert_int_equal(searches, 1);
	make_tool(dir_b, 0755);
	expect(dir_b);
	for (int i = 0; i < 5; i++)
		expect(dir_b);
	assert_int_equal(searches, 2);
}

static void test_every_change_is_seen(void **state)
{
	(void)state;
	char p[PATH_MAX * 2], q[PATH_MAX * 2];
	al_path_memo_reset();
	expect(dir_b);
	/* created earlier on PATH */
	make_tool(dir_a, 0755);
	expect(dir_a);
	/* the answer no longer executable */
	tool_path(dir_a, p, sizeof(p));
	assert_int_equal(chmod(p, 0644), 0);
	expect(dir_b);
	/* reinstalled (a new file: its directory changes) */
	assert_int_equal(unlink(p), 0);
	make_tool(dir_a, 0755);
	expect(dir_a);
	/* renamed away, then back */
	snprintf(q, sizeof(q), "%s/other", dir_a);
	assert_int_equal(rename(p, q), 0);
	expect(dir_b);
	assert_int_equal(rename(q, p), 0);
	expect(dir_a);
	/* a PATH directory that did not exist appears with the program */
	assert_int_equal(mkdir(dir_c, 0755), 0);
	make_tool(dir_c, 0755);
	expect(dir_c);
	/* removed everywhere */
	tool_path(dir_c, q, sizeof(q));
	assert_int_equal(unlink(q), 0);
	assert_int_equal(unlink(p), 0);
	tool_path(dir_b, q, sizeof(q));
	assert_int_equal(unlink(q), 0);
	expect(NULL);
}

/* Within a hold the directories are checked once: a lookup in the same
 * pass searches nothing; after the hold a change is seen again. */
static void test_hold_checks_once(void **state)
{
	(void)state;
	al_path_memo_reset();
	make_tool(dir_b, 0755);
	expect(dir_b);
	al_path_memo_hold();
	searches = 0;
	expect(dir_b);
	make_tool(dir_a, 0755); /* during the pass: the pass's view stays */
	expect(dir_b);
	assert_int_equal(searches, 0);
	al_path_memo_release();
	expect(dir_a);
	char p[PATH_MAX * 2];
	tool_path(dir_a, p, sizeof(p));
	assert_int_equal(unlink(p), 0);
	tool_path(dir_b, p, sizeof(p));
	assert_int_equal(unlink(p), 0);
	expect(NULL);
}

/* al_path_find goes through the memo and still sees a new program. */
static void test_path_find_sees_changes(void **state)
{
	(void)state;
	char *out = NULL, want[PATH_MAX * 2];
	char penv[PATH_MAX * 2 + 2];
	al_path_memo_reset();
	snprintf(penv, sizeof(penv), "%s:%s", dir_a, dir_b);
	assert_int_equal(al_path_find(penv, "tool", &out), -ENOENT);
	make_tool(dir_b, 0755);
	assert_int_equal(al_path_find(penv, "tool", &out), 0);
	tool_path(dir_b, want, sizeof(want));
	assert_string_equal(out, want);
	free(out);
	/* another PATH value is answered for itself */
	assert_int_equal(al_path_find(dir_a, "tool", &out), -ENOENT);
	assert_int_equal(al_path_find(penv, "tool", &out), 0);
	free(out);
	tool_path(dir_b, want, sizeof(want));
	assert_int_equal(unlink(want), 0);
	assert_int_equal(al_path_find(penv, "tool", &out), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_repeats_do_not_search),
		cmocka_unit_test(test_every_change_is_seen),
		cmocka_unit_test(test_hold_checks_once),
		cmocka_unit_test(test_path_find_sees_changes),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
