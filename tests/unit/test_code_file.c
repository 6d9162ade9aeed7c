/* al_code_file: the loaded object holding an address (the observation and
 * filter caches key on that file's identity). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <gnu/libc-version.h>

#include <cmocka.h>

#include "core/code_file.h"

static void test_library_function(void **state)
{
	(void)state;
	/* libc is a shared object in every build (the CLI links only the
	 * core libraries statically); a function sanitizers do not intercept
	 * (ASan's snprintf lives in the program or libasan) */
	const char *p =
		al_code_file((const void *)(uintptr_t)gnu_get_libc_version);
	assert_int_equal(p[0], '/');
	assert_non_null(strstr(p, "libc.so"));
	struct stat a, b;
	assert_int_equal(stat(p, &a), 0);
	assert_int_equal(stat("/proc/self/exe", &b), 0);
	assert_false(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
}

static void test_main_program(void **state)
{
	(void)state;
	assert_string_equal(
		al_code_file((const void *)(uintptr_t)test_main_program),
		"/proc/self/exe");
}

static void test_no_object(void **state)
{
	(void)state;
	assert_string_equal(al_code_file(NULL), "/proc/self/exe");
	int local = 0;
	assert_string_equal(al_code_file(&local), "/proc/self/exe");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_library_function),
		cmocka_unit_test(test_main_program),
		cmocka_unit_test(test_no_object),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
