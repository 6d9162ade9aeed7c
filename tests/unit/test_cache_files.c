/* al_cache_files_prune and al_cache_files_remove (core/cache_files.h): a
 * cache directory keeps the newest few files of a prefix, and nothing
 * else of it is touched. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/cache_files.h"

static char dir[] = "/tmp/al-cache-files-XXXXXX";

static void path_of(const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", dir, name);
}

/* A file whose modification time is `age` seconds after the epoch's
 * first day (older files have smaller ages). */
static void make_file(const char *name, long age)
{
	char p[256];
	path_of(name, p, sizeof(p));
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{}", 2), 2);
	struct timespec t[2] = {{86400 + age, 0}, {86400 + age, 0}};
	assert_int_equal(futimens(fd, t), 0);
	close(fd);
}

static bool exists(const char *name)
{
	char p[256];
	struct stat st;
	path_of(name, p, sizeof(p));
	return lstat(p, &st) == 0;
}

static void remove_all(void)
{
	static const char *const names[] = {
		"p-1.json", "p-2.json", "p-3.json", "p-4.json", "p-5.json",
		"p-.json",  "p-6.txt",	"q-1.json", "pp-1.json", "target.json",
		"p-link.json",
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char p[256];
		path_of(names[i], p, sizeof(p));
		unlink(p);
	}
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	remove_all();
	return rmdir(dir);
}

static void test_prune_keeps_the_newest(void **state)
{
	(void)state;
	remove_all();
	make_file("p-3.json", 30);
	make_file("p-1.json", 10);
	make_file("p-5.json", 50);
	make_file("p-2.json", 20);
	make_file("p-4.json", 40);
	/* not members: another prefix, another suffix, a longer prefix */
	make_file("q-1.json", 1);
	make_file("p-6.txt", 1);
	make_file("pp-1.json", 1);
	al_cache_files_prune(dir, "p-", 3);
	assert_false(exists("p-1.json"));
	assert_false(exists("p-2.json"));
	assert_true(exists("p-3.json"));
	assert_true(exists("p-4.json"));
	assert_true(exists("p-5.json"));
	assert_true(exists("q-1.json"));
	assert_true(exists("p-6.txt"));
	assert_true(exists("pp-1.json"));
	/* within the bound: nothing goes */
	al_cache_files_prune(dir, "p-", 3);
	assert_true(exists("p-3.json"));
}

static void test_a_link_goes_not_its_target(void **state)
{
	(void)state;
	remove_all();
	make_file("target.json", 5);
	char target[256], link_path[256];
	path_of("target.json", target, sizeof(target));
	path_of("p-link.json", link_path, sizeof(link_path));
	assert_int_equal(symlink(target, link_path), 0);
	make_file("p-1.json", 100);
	/* the link's own time is now: the file of age 100 is older */
	al_cache_files_prune(dir, "p-", 1);
	assert_true(exists("target.json"));
	assert_int_equal(exists("p-link.json") + exists("p-1.json"), 1);
	al_cache_files_remove(dir, "p-");
	assert_false(exists("p-link.json"));
	assert_false(exists("p-1.json"));
	assert_true(exists("target.json"));
}

static void test_remove_takes_the_prefix_only(void **state)
{
	(void)state;
	remove_all();
	make_file("p-1.json", 1);
	make_file("p-.json", 1); /* the prefix and the suffix alone: a member */
	make_file("q-1.json", 1);
	make_file("p-6.txt", 1);
	al_cache_files_remove(dir, "p-");
	assert_false(exists("p-1.json"));
	assert_false(exists("p-.json"));
	assert_true(exists("q-1.json"));
	assert_true(exists("p-6.txt"));
}

static void test_a_missing_directory_is_left_alone(void **state)
{
	(void)state;
	al_cache_files_prune("/nonexistent/al-cache", "p-", 0);
	al_cache_files_remove("/nonexistent/al-cache", "p-");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prune_keeps_the_newest),
		cmocka_unit_test(test_a_link_goes_not_its_target),
		cmocka_unit_test(test_remove_takes_the_prefix_only),
		cmocka_unit_test(test_a_missing_directory_is_left_alone),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
