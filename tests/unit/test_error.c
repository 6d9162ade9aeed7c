/* The error contract (include/airlock/error.h): al_error_set keeps the
 * first error, al_error_wrap adds context to it or supplies one where an
 * inner function returned a bare errno. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>

#include <cmocka.h>

#include <airlock/error.h>

static void test_first_error_wins(void **state)
{
	(void)state;
	al_error *err = NULL;
	assert_int_equal(al_error_set(&err, AL_ERR_IO, EIO, "disk", "first"), -EIO);
	assert_int_equal(al_error_set(&err, AL_ERR_INTERNAL, ENOMEM, NULL, "second"),
			 -ENOMEM);
	assert_string_equal(al_error_get_message(err), "first");
	assert_string_equal(al_error_get_reason(err), "disk");
	al_error_free(err);
	assert_int_equal(al_error_set(NULL, AL_ERR_IO, 0, NULL, "x"), -EINVAL);
}

static void test_wrap_adds_context(void **state)
{
	(void)state;
	al_error *err = NULL;
	al_error_set(&err, AL_ERR_INVALID_CONFIG, EINVAL, "tenants", "missing");
	assert_int_equal(al_error_wrap(&err, -EINVAL, "loading %s", "a.json"),
			 -EINVAL);
	assert_string_equal(al_error_get_message(err), "loading a.json: missing");
	assert_int_equal(al_error_get_code(err), AL_ERR_INVALID_CONFIG);
	assert_string_equal(al_error_get_reason(err), "tenants");
	assert_int_equal(al_error_get_errno(err), EINVAL);
	al_error_free(err);
}

static void test_wrap_supplies_a_missing_error(void **state)
{
	(void)state;
	al_error *err = NULL;
	assert_int_equal(al_error_wrap(&err, -ENOMEM, NULL), -ENOMEM);
	assert_non_null(err);
	assert_int_equal(al_error_get_code(err), AL_ERR_INTERNAL);
	assert_int_equal(al_error_get_errno(err), ENOMEM);
	assert_string_equal(al_error_get_message(err), strerror(ENOMEM));
	al_error_free(err);
	err = NULL;
	al_error_wrap(&err, -EIO, "reading");
	assert_string_equal(al_error_get_message(err), "reading: Input/output error");
	al_error_free(err);
}

static void test_wrap_leaves_success_alone(void **state)
{
	(void)state;
	al_error *err = NULL;
	assert_int_equal(al_error_wrap(&err, 0, "ctx"), 0);
	assert_int_equal(al_error_wrap(&err, 3, "ctx"), 3);
	assert_null(err);
	assert_int_equal(al_error_wrap(NULL, -EIO, "ctx"), -EIO);
}

static void test_wrap_cuts_to_fit(void **state)
{
	(void)state;
	al_error *err = NULL;
	char big[600];
	memset(big, 'm', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	al_error_set(&err, AL_ERR_IO, EIO, NULL, "%s", big);
	al_error_wrap(&err, -EIO, "%s", big);
	const char *m = al_error_get_message(err);
	assert_true(strlen(m) < 512);
	assert_non_null(strstr(m, "m: m"));
	al_error_free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_error_wins),
		cmocka_unit_test(test_wrap_adds_context),
		cmocka_unit_test(test_wrap_supplies_a_missing_error),
		cmocka_unit_test(test_wrap_leaves_success_alone),
		cmocka_unit_test(test_wrap_cuts_to_fit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
