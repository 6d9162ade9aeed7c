/* The conformance kit against the built-in providers: `local` and
 * `disabled` must pass with zero failures.  Every skip is printed with its
 * reason (a fact the provider reported). */
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

#include <airlock/airlock.h>
#include <airlock/contract_kit.h>

static al_kit_report *run_kit(const char *id, const char *only)
{
	const al_provider_ops *ops = al_provider_lookup(id);
	assert_non_null(ops);
	al_kit_options opts = {.only = only};
	al_kit_report *rep = NULL;
	al_error *err = NULL;
	int rc = al_kit_run(ops, NULL, &opts, &rep, &err);
	if (rc < 0)
		fail_msg("al_kit_run: %s", al_error_get_message(err));
	assert_non_null(rep);
	al_kit_report_print(rep, stdout);
	return rep;
}

static void expect_status(const al_kit_report *rep, const char *name,
			  al_kit_status want)
{
	const al_kit_case_result *c = al_kit_report_find(rep, name);
	if (c == NULL)
		fail_msg("case %s missing from the report", name);
	if (c->status != want)
		fail_msg("%s: expected %s, got %s (%s)", name,
			 al_kit_status_name(want), al_kit_status_name(c->status),
			 c->reason ? c->reason : "");
}

static void test_local_passes(void **state)
{
	(void)state;
	al_kit_report *rep = run_kit("local", NULL);
	assert_int_equal(al_kit_report_failures(rep), 0);
	/* The facts drive the run: local claims no isolation axis ... */
	expect_status(rep, "isolation.network_restricted", AL_KIT_SKIP);
	expect_status(rep, "disabled.every_request", AL_KIT_SKIP);
	/* ... and the generic cases really ran. */
	expect_status(rep, "io.binary_output", AL_KIT_PASS);
	expect_status(rep, "limit.wall_ms", AL_KIT_PASS);
	expect_status(rep, "limit.memory_bytes", AL_KIT_PASS);
	expect_status(rep, "concurrent.one_handle_16", AL_KIT_PASS);
	expect_status(rep, "coverage", AL_KIT_PASS);
	for (size_t i = 0; i < rep->n_cases; i++)
		if (rep->cases[i].status == AL_KIT_SKIP)
			assert_non_null(rep->cases[i].reason);
	al_kit_report_free(rep);
}

static void test_disabled_passes(void **state)
{
	(void)state;
	al_kit_report *rep = run_kit("disabled", NULL);
	assert_int_equal(al_kit_report_failures(rep), 0);
	expect_status(rep, "disabled.every_request", AL_KIT_PASS);
	/* No language: the generic cases are skipped by the facts. */
	expect_status(rep, "io.stdin_delivered", AL_KIT_SKIP);
	expect_status(rep, "result.shape", AL_KIT_PASS);
	al_kit_report_free(rep);
}

static void test_report_json(void **state)
{
	(void)state;
	al_kit_report *rep = run_kit("disabled", "disabled.,probe.facts");
	/* ensure and release always frame a run. */
	assert_int_equal(rep->n_cases, 4);
	char *json = al_kit_report_to_json(rep);
	assert_non_null(json);
	assert_non_null(strstr(json, "\"provider\": \"disabled\""));
	assert_non_null(strstr(json, "\"name\": \"disabled.every_request\""));
	assert_non_null(strstr(json, "\"status\": \"pass\""));
	assert_non_null(strstr(json, "\"failed\": 0"));
	free(json);
	al_kit_report_free(rep);
}

static void test_bad_ops_refused(void **state)
{
	(void)state;
	al_provider_ops empty = {.id = "empty"};
	al_kit_report *rep = NULL;
	al_error *err = NULL;
	assert_int_equal(al_kit_run(&empty, NULL, NULL, &rep, &err), -EINVAL);
	assert_null(rep);
	assert_int_equal(al_error_get_code(err), AL_ERR_INVALID_ARGUMENT);
	al_error_free(err);
}

int main(void)
{
	/* The toolbelt cases need airlock-tool: the build tree's, one
	 * directory up from this test binary. */
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 32);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash != NULL) {
			strcpy(slash, "/../toolbelt");
			setenv("AIRLOCK_TOOLBELT_DIR", exe, 1);
		}
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_local_passes),
		cmocka_unit_test(test_disabled_passes),
		cmocka_unit_test(test_report_json),
		cmocka_unit_test(test_bad_ops_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
