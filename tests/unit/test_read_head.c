/* al_read_head (src/core/util.h): the start of a small file into a
 * caller's buffer, NUL-terminated, with typed failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void test_whole_and_cut(void **state)
{
	(void)state;
	char dir[] = "/tmp/al-read-head.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[64], empty[64];
	snprintf(path, sizeof(path), "%s/f", dir);
	snprintf(empty, sizeof(empty), "%s/e", dir);
	write_file(path, "SigIgn:\t0000000000001000\n");
	write_file(empty, "");
	char buf[64];
	assert_int_equal(al_read_head(path, buf, sizeof(buf)), 25);
	assert_string_equal(buf, "SigIgn:\t0000000000001000\n");
	/* a short buffer holds len - 1 bytes and the NUL */
	char small[7];
	assert_int_equal(al_read_head(path, small, sizeof(small)), 6);
	assert_string_equal(small, "SigIgn");
	assert_int_equal(al_read_head(empty, buf, sizeof(buf)), -EIO);
	assert_int_equal(al_read_head(path, buf, 1), -EINVAL);
	unlink(path);
	assert_int_equal(al_read_head(path, buf, sizeof(buf)), -ENOENT);
	unlink(empty);
	rmdir(dir);
}

static void test_proc_text(void **state)
{
	(void)state;
	char buf[4096];
	assert_true(al_read_head("/proc/self/status", buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "\nSigIgn:\t"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_and_cut),
		cmocka_unit_test(test_proc_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
