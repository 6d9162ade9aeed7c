/* The conformance kit must FAIL a provider that breaks the contract.  Each
 * test wraps the example provider (examples/provider) in one deliberate
 * lie or defect and checks that the case covering it fails, while the
 * honest example passes the same cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/airlock.h>
#include <airlock/contract_kit.h>

/* The example is a separate program; its provider is one file. */
#include "../../examples/provider/example_provider.c"

typedef enum defect {
	HONEST = 0,
	LIES_MEMORY,	   /* advertises memory_bytes, ignores it */
	LIES_ISOLATION,	   /* claims process + filesystem isolation */
	LEAKS_HOST_ENV,	   /* passes the host's variables through */
	IGNORES_CAP,	   /* keeps everything whatever output_bytes says */
	BAD_SHAPE,	   /* a timed-out result with an exit code */
	CODE_AS_PATH,	   /* runs the file the code names */
} defect;

static defect mode;
static const al_provider_ops *inner = &example_provider_ops;

static int w_probe(const char *cfg, al_facts **out, al_error **err)
{
	int rc = inner->probe(cfg, out, err);
	if (rc < 0)
		return rc;
	free((*out)->provider);
	(*out)->provider = strdup("broken");
	if (mode == LIES_MEMORY)
		(*out)->limits |= AL_LIMIT_MEMORY_BYTES;
	if (mode == LIES_ISOLATION) {
		(*out)->isolation.process_contained = true;
		(*out)->isolation.host_filesystem_restricted = true;
	}
	return (*out)->provider != NULL ? 0 : -ENOMEM;
}

static int w_ensure(const char *cfg, al_provider_handle **h, al_error **err)
{
	return inner->ensure(cfg, h, err);
}

static int w_health(al_provider_handle *h, al_error **err)
{
	return inner->health(h, err);
}

static int w_interrupt(al_provider_handle *h, const char *id, al_error **err)
{
	return inner->interrupt(h, id, err);
}

static int w_release(al_provider_handle *h, al_error **err)
{
	return inner->release(h, err);
}

extern char **environ;

static int w_execute(al_provider_handle *h, const al_exec *ex, al_result *res,
		     al_error **err)
{
	al_request *req = al_request_dup(ex->request);
	al_exec copy = *ex;
	int rc = -ENOMEM;
	if (req == NULL)
		return rc;
	copy.request = req;
	switch (mode) {
	case LIES_MEMORY:
		req->limits.set &= ~(unsigned)AL_LIMIT_MEMORY_BYTES;
		req->limits.memory_bytes = 0;
		break;
	case LEAKS_HOST_ENV: {
		size_t n = 0;
		while (environ[n] != NULL)
			n++;
		copy.host_env = (const char *const *)environ;
		copy.n_host_env = n;
		break;
	}
	case IGNORES_CAP:
		req->limits.output_bytes = 1u << 30;
		break;
	case CODE_AS_PATH: {
		/* "sh <code>": the code's text used as a script path. */
		char *code = NULL;
		if (asprintf(&code, "exec sh '%s'\n",
			     (const char *)req->code.data) < 0)
			goto out;
		free(req->code.data);
		req->code.data = (unsigned char *)code;
		req->code.len = strlen(code);
		break;
	}
	default:
		break;
	}
	rc = inner->execute(h, &copy, res, err);
	if (rc == 0 && mode == IGNORES_CAP) {
		/* Claim the cap held: the kit must look at the bytes. */
		res->output_seen[0] = res->output[0].len;
		res->output_seen[1] = res->output[1].len;
	}
	if (rc == 0 && mode == BAD_SHAPE &&
	    res->outcome == AL_OUTCOME_TIMED_OUT) {
		res->has_exit_code = true;
		res->exit_code = 143;
	}
out:
	al_request_free(req);
	return rc;
}

static const al_provider_ops broken_ops = {
	.id = "broken",
	.probe = w_probe,
	.ensure = w_ensure,
	.health = w_health,
	.execute = w_execute,
	.interrupt = w_interrupt,
	.release = w_release,
};

static al_kit_report *kit(const al_provider_ops *ops, const char *config,
			  const char *only)
{
	al_kit_options opts = {.only = only};
	al_kit_report *rep = NULL;
	al_error *err = NULL;
	if (al_kit_run(ops, config, &opts, &rep, &err) < 0)
		fail_msg("al_kit_run: %s", al_error_get_message(err));
	al_kit_report_print(rep, stdout);
	return rep;
}

static al_kit_status status(const al_kit_report *rep, const char *name)
{
	const al_kit_case_result *c = al_kit_report_find(rep, name);
	if (c == NULL)
		fail_msg("case %s missing", name);
	return c->status;
}

/* The honest provider passes `cases`; with `d` the case `name` fails. */
static void expect_caught(defect d, const char *only, const char *name)
{
	mode = HONEST;
	al_kit_report *rep = kit(&broken_ops, NULL, only);
	assert_int_equal(al_kit_report_failures(rep), 0);
	al_kit_report_free(rep);

	mode = d;
	rep = kit(&broken_ops, NULL, only);
	assert_int_equal(status(rep, name), AL_KIT_FAIL);
	assert_non_null(al_kit_report_find(rep, name)->reason);
	al_kit_report_free(rep);
	mode = HONEST;
}

static void test_example_passes(void **state)
{
	(void)state;
	al_kit_report *rep = kit(&example_provider_ops, NULL, NULL);
	assert_int_equal(al_kit_report_failures(rep), 0);
	assert_int_equal(status(rep, "coverage"), AL_KIT_PASS);
	al_kit_report_free(rep);
}

static void test_unenforced_memory_limit_fails(void **state)
{
	(void)state;
	/* Honest: memory_bytes is not advertised, so it is refused. */
	expect_caught(LIES_MEMORY, "limit.memory_bytes", "limit.memory_bytes");
}

static void test_false_isolation_claims_fail(void **state)
{
	(void)state;
	mode = LIES_ISOLATION;
	al_kit_report *rep = kit(&broken_ops, NULL, "isolation.");
	assert_int_equal(status(rep, "isolation.process_contained"),
			 AL_KIT_FAIL);
	assert_int_equal(status(rep, "isolation.host_filesystem_restricted"),
			 AL_KIT_FAIL);
	/* Not claimed: skipped, with the fact as the reason. */
	assert_int_equal(status(rep, "isolation.network_restricted"),
			 AL_KIT_SKIP);
	al_kit_report_free(rep);
	mode = HONEST;
}

static void test_host_env_leak_fails(void **state)
{
	(void)state;
	expect_caught(LEAKS_HOST_ENV, "env.run_variables_only",
		      "env.run_variables_only");
}

static void test_ignored_output_cap_fails(void **state)
{
	(void)state;
	expect_caught(IGNORES_CAP, "limit.output_bytes", "limit.output_bytes");
}

static void test_bad_result_shape_fails(void **state)
{
	(void)state;
	expect_caught(BAD_SHAPE, "limit.wall_ms,result.shape", "result.shape");
}

static void test_code_run_as_path_fails(void **state)
{
	(void)state;
	expect_caught(CODE_AS_PATH, "code.", "code.content_not_path");
}

static void test_failed_release_is_reported(void **state)
{
	(void)state;
	al_kit_report *rep =
		kit(&example_provider_ops, "{\"fail_release\": true}", "probe.");
	assert_int_equal(status(rep, "provider.release"), AL_KIT_FAIL);
	assert_non_null(strstr(al_kit_report_find(rep, "provider.release")->reason,
			       "quarantine"));
	al_kit_report_free(rep);
}

static void test_bad_config_fails_ensure(void **state)
{
	(void)state;
	al_kit_report *rep = kit(&example_provider_ops, "{\"nope\": 1}",
				 "io.empty_program");
	/* The probe refuses the config too: that is a failed probe case
	 * and every run case has no handle to use. */
	assert_int_equal(status(rep, "provider.ensure"), AL_KIT_FAIL);
	assert_true(al_kit_report_failures(rep) > 0);
	al_kit_report_free(rep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example_passes),
		cmocka_unit_test(test_unenforced_memory_limit_fails),
		cmocka_unit_test(test_false_isolation_claims_fail),
		cmocka_unit_test(test_host_env_leak_fails),
		cmocka_unit_test(test_ignored_output_cap_fails),
		cmocka_unit_test(test_bad_result_shape_fails),
		cmocka_unit_test(test_code_run_as_path_fails),
		cmocka_unit_test(test_failed_release_is_reported),
		cmocka_unit_test(test_bad_config_fails_ensure),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
