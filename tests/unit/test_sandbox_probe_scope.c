/* A selection probe scoped to a request's language (core/probe_scope.h,
 * set by the host around a probe that only judges one request): the
 * sandbox observes that language alone when the host has it, and
 * everything otherwise; such a probe is no handle's, so the ensure that
 * follows observes the whole host and its handle runs every language.
 * docs/host.md, "Step 6: selection". */
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

#include "core/probe_scope.h"
#include "lang/languages.h"
#include "unit_support.h"

static const al_provider_ops *ops;
/* The unscoped probe's facts. */
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

static al_facts *scoped_probe(const char *language)
{
	al_facts *f = NULL;
	al_probe_scope_set(language);
	int rc = ops->probe(NULL, &f, NULL);
	al_probe_scope_set(NULL);
	assert_int_equal(rc, 0);
	return f;
}

/* A second language the host has besides sh, or NULL. */
static const char *other_language(void)
{
	for (size_t i = 0; i < all->n_languages; i++)
		if (strcmp(all->languages[i].language, "sh") != 0 &&
		    strcmp(all->languages[i].language, "exec") != 0)
			return all->languages[i].language;
	return NULL;
}

static void test_scoped_probe_observes_its_language(void **state)
{
	(void)state;
	const char *other = other_language();
	if (!all->available || al_facts_find_language(all, "sh") == NULL ||
	    other == NULL) {
		print_message("skip: the sandbox facts say it is unavailable "
			      "or lack sh and a second language\n");
		return;
	}
	al_facts *f = scoped_probe("sh");
	assert_true(f->available);
	assert_int_equal(f->n_languages, 1);
	assert_string_equal(f->languages[0].language, "sh");
	/* everything else is the whole probe's */
	assert_int_equal(f->limits, all->limits);
	assert_int_equal(f->network, all->network);
	assert_int_equal(f->workspace, all->workspace);
	assert_int_equal(f->exec, all->exec);
	al_facts_free(f);
	assert_null(al_probe_scope_language());

	/* The ensure right after is not given the scoped facts: its handle
	 * runs a language the scoped probe did not look at. */
	al_provider_handle *h = NULL;
	assert_int_equal(ops->ensure(NULL, &h, NULL), 0);
	char req[160];
	snprintf(req, sizeof(req),
		 "{\"language\": \"%s\", \"code\": \"\"}", other);
	al_result *r = ut_execute_json(ops, h, req, "probe-scope");
	assert_int_equal(r->outcome, AL_OUTCOME_COMPLETED);
	al_result_free(r);
	assert_int_equal(ops->release(h, NULL), 0);
}

/* A language the host lacks, or one airlock does not know: the whole
 * probe, so a refusal says what the host has. */
static void test_absent_language_probes_all(void **state)
{
	(void)state;
	const char *absent = ut_absent_language(all);
	const char *const tries[] = {absent, "no-such-language"};
	for (size_t i = 0; i < 2; i++) {
		if (i == 0 && absent == NULL) {
			print_message("skip: every language has a toolchain "
				      "here\n");
			continue;
		}
		al_facts *f = scoped_probe(tries[i]);
		assert_int_equal(f->available, all->available);
		assert_true(ut_same_languages(f, all));
		al_facts_free(f);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scoped_probe_observes_its_language),
		cmocka_unit_test(test_absent_language_probes_all),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
