/* A sandbox handle that serves one run (al_sandbox_one_run, as `airlock
 * run` sets it): its probe observes the run's language alone when the
 * host has it, and the whole probe otherwise; the ensure that follows
 * takes the probe's facts and context, and its run works.
 * docs/sandbox.md, "What the probe checks". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <airlock/airlock.h>

#include "lang/languages.h"
#include "sandbox/sandbox.h"
#include "unit_support.h"

static const al_provider_ops *ops;
/* The whole probe's facts, made before any one-run setting. */
static al_facts *all;

static int setup(void **state)
{
	(void)state;
	return ut_probe_whole("sandbox", &ops, &all);
}

static int teardown(void **state)
{
	(void)state;
	al_facts_free(all);
	return 0;
}

static al_result *run_sh(al_provider_handle *h)
{
	return ut_execute_json(
		ops, h, "{\"language\": \"sh\", \"code\": \"echo one\"}",
		"one-run");
}

/* The run's language alone, in the probe's facts and the handle's; the
 * handle, made from the probe's context, runs it. */
static void test_facts_of_its_language(void **state)
{
	(void)state;
	if (!all->available || al_facts_find_language(all, "sh") == NULL) {
		print_message("skip: the sandbox facts say it is unavailable "
			      "or has no sh\n");
		return;
	}
	al_sandbox_one_run("sh");
	al_facts *f = NULL;
	assert_int_equal(ops->probe(NULL, &f, NULL), 0);
	assert_true(f->available);
	assert_int_equal(f->n_languages, 1);
	assert_string_equal(f->languages[0].language, "sh");
	/* everything else is the whole probe's */
	assert_int_equal(f->limits, all->limits);
	assert_int_equal(f->network, all->network);
	assert_int_equal(f->workspace, all->workspace);
	al_facts_free(f);

	al_provider_handle *h = NULL;
	assert_int_equal(ops->ensure(NULL, &h, NULL), 0);
	al_result *r = run_sh(h);
	assert_int_equal(r->outcome, AL_OUTCOME_COMPLETED);
	assert_string_equal((const char *)r->output[AL_STDOUT].data, "one\n");
	al_result_free(r);
	assert_int_equal(ops->release(h, NULL), 0);

	/* an ensure with no probe just before observes on its own: the
	 * same one language */
	al_provider_handle *h2 = NULL;
	assert_int_equal(ops->ensure("{\"tmp_bytes\": 33554432}", &h2, NULL),
			 0);
	al_result *r2 = run_sh(h2);
	assert_int_equal(r2->outcome, AL_OUTCOME_COMPLETED);
	al_result_free(r2);
	assert_int_equal(ops->release(h2, NULL), 0);
}

/* A language the host lacks, or none known: the whole probe, as for any
 * handle (its facts say which languages there are). */
static void test_absent_language_probes_all(void **state)
{
	(void)state;
	const char *absent = ut_absent_language(all);
	const char *const tries[] = {absent, "no-such-language", NULL};
	for (size_t i = 0; i < 3; i++) {
		if (i == 0 && absent == NULL) {
			print_message("skip: every language has a toolchain "
				      "here\n");
			continue;
		}
		al_sandbox_one_run(tries[i]);
		al_facts *f = NULL;
		assert_int_equal(ops->probe(NULL, &f, NULL), 0);
		assert_int_equal(f->available, all->available);
		assert_true(ut_same_languages(f, all));
		al_facts_free(f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_facts_of_its_language),
		cmocka_unit_test(test_absent_language_probes_all),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
