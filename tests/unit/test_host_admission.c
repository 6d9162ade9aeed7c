/* The host pipeline split for durable runs (src/host/admission.h): an
 * admission holds the slot and the idempotency claim and audits
 * run.started without calling the provider; al_host_finish caps, checks
 * the shape, audits run.finished once and stores the result for the key;
 * al_host_resume finishes what an earlier process admitted, lost runs
 * included, so a retry with the key never runs twice. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <airlock/airlock.h>

#include "host/admission.h"

/* A provider that is probed and ensured but must never execute here. */
static int n_execute;

static int tp_probe(const char *config_json, al_facts **out, al_error **err)
{
	(void)config_json;
	(void)err;
	al_facts *f = al_facts_new("tp", AL_SAFETY_SANDBOXED);
	f->available = true;
	f->limits = AL_LIMIT__ALL;
	f->network = 1u << AL_NETWORK_NONE;
	f->workspace = 7;
	f->streaming = true;
	al_facts_add_language(f, "sh", "sh", "5.2", "/bin/sh");
	*out = f;
	return 0;
}

static int tp_ensure(const char *config_json, al_provider_handle **h,
		     al_error **err)
{
	(void)config_json;
	(void)err;
	*h = (al_provider_handle *)calloc(1, 16);
	return 0;
}

static int tp_execute(al_provider_handle *h, const al_exec *exec,
		      al_result *res, al_error **err)
{
	(void)h;
	(void)exec;
	(void)res;
	(void)err;
	n_execute++;
	return -EIO;
}

static int tp_release(al_provider_handle *h, al_error **err)
{
	(void)err;
	free(h);
	return 0;
}

static const al_provider_ops tp = {
	.id = "tp",
	.probe = tp_probe,
	.ensure = tp_ensure,
	.execute = tp_execute,
	.release = tp_release,
};
static const al_provider_ops *const test_providers[] = {&tp, NULL};

typedef struct fx {
	char dir[64];
	char state[128];
	al_host *host;
} fx;

static const char cfg_text[] =
	"{\"providers\": [\"tp\"], \"acknowledged_providers\": [\"tp\"],"
	" \"concurrency\": 1, \"slot_wait_ms\": 50,"
	" \"tenants\": {\"acme\": {\"languages\": [\"sh\"]}}}";
static al_host_context acme = {.tenant = "acme", .principal = "tester"};

static int fx_setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	al_config *cfg = NULL;
	snprintf(f->dir, sizeof(f->dir), "/tmp/al-admission-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
	assert_int_equal(al_config_parse(cfg_text, strlen(cfg_text), &cfg, NULL),
			 0);
	al_host_options o = {.state_dir = f->state, .providers = test_providers};
	assert_int_equal(al_host_new(cfg, &o, &f->host, NULL), 0);
	al_config_free(cfg);
	n_execute = 0;
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	fx *f = *state;
	char cmd[256];
	al_host_free(f->host);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static int announced;
static void on_run_id(void *ctx, const char *run_id)
{
	(void)ctx;
	(void)run_id;
	announced++;
}

static al_admission *admit(fx *f, const char *json, al_result **refused)
{
	al_admission *adm = NULL;
	al_run_options o = {.on_run_id = on_run_id};
	*refused = NULL;
	assert_int_equal(al_host_admit_json(f->host, &acme, json, strlen(json),
					    &o, &adm, refused),
			 0);
	assert_true((adm == NULL) != (*refused == NULL));
	return adm;
}

/* A result as a provider (the supervisor) would record it. */
static al_result *ran(const char *run_id, const char *out)
{
	al_result *r = al_result_new();
	snprintf(r->run_id, sizeof(r->run_id), "%s", run_id);
	al_result_set_outcome(r, AL_OUTCOME_COMPLETED, NULL);
	r->has_exit_code = true;
	r->exit_code = 0;
	free(r->output[AL_STDOUT].data);
	r->output[AL_STDOUT].data = (unsigned char *)strdup(out);
	r->output[AL_STDOUT].len = strlen(out);
	r->output_seen[AL_STDOUT] = strlen(out);
	return r;
}

static int count_in_audit(fx *f, const char *run_id, const char *event)
{
	char *lines = NULL;
	int n = 0;
	assert_int_equal(al_audit_tail(f->state, 1000, &lines, NULL), 0);
	char want_id[80], want_ev[64];
	snprintf(want_id, sizeof(want_id), "\"run_id\":\"%s\"", run_id);
	snprintf(want_ev, sizeof(want_ev), "\"event\":\"%s\"", event);
	for (char *line = strtok(lines, "\n"); line; line = strtok(NULL, "\n"))
		if (strstr(line, want_id) && strstr(line, want_ev))
			n++;
	free(lines);
	return n;
}

static void test_admit_then_finish(void **state)
{
	fx *f = *state;
	al_result *res = NULL, *refused = NULL;
	announced = 0;
	al_admission *adm = admit(
		f, "{\"language\": \"sh\", \"code\": \"x\", \"limits\": "
		   "{\"output_bytes\": 4}}",
		&refused);
	assert_non_null(adm);
	char id[40];
	snprintf(id, sizeof(id), "%s", al_admission_run_id(adm));
	/* Admitted: audited, not announced, nothing executed. */
	assert_int_equal(announced, 0);
	assert_int_equal(n_execute, 0);
	assert_int_equal(count_in_audit(f, id, "run.started"), 1);
	assert_string_equal(al_admission_provider(adm), "tp");
	assert_non_null(strstr(al_admission_request_json(adm), "\"code\""));
	/* The slot is held: a second request waits, then is busy. */
	al_result *busy = NULL;
	assert_null(admit(f, "{\"language\": \"sh\", \"code\": \"y\"}", &busy));
	assert_int_equal(busy->outcome, AL_OUTCOME_UNAVAILABLE);
	assert_string_equal(busy->reason, "busy");
	al_result_free(busy);

	al_finish_options o = {.launched = true};
	assert_int_equal(al_host_finish(f->host, adm, ran(id, "abcdefgh"), &o,
					&res),
			 0);
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	assert_string_equal(res->run_id, id);
	assert_true(res->truncated[AL_STDOUT]); /* capped by the host */
	assert_int_equal(memcmp(res->output[AL_STDOUT].data, "abcd", 4), 0);
	assert_non_null(res->provider);
	assert_int_equal(count_in_audit(f, id, "run.finished"), 1);
	assert_int_equal(al_host_audit_has(f->host, id, "run.finished"), 1);
	assert_int_equal(al_host_audit_has(f->host, "nope", "run.finished"), 0);
	al_result_free(res);
	/* The slot is back. */
	adm = admit(f, "{\"language\": \"sh\", \"code\": \"z\"}", &refused);
	assert_non_null(adm);
	al_admission_free(adm);
	assert_int_equal(n_execute, 0);
}

static void test_bad_shape_and_refusals(void **state)
{
	fx *f = *state;
	al_result *res = NULL, *refused = NULL;
	al_admission *adm =
		admit(f, "{\"language\": \"sh\", \"code\": \"x\"}", &refused);
	al_result *bad = ran(al_admission_run_id(adm), "");
	bad->outcome = AL_OUTCOME_TIMED_OUT; /* with an exit code: a bug */
	al_finish_options o = {.launched = true};
	assert_int_equal(al_host_finish(f->host, adm, bad, &o, &res), 0);
	assert_int_equal(res->outcome, AL_OUTCOME_UNAVAILABLE);
	assert_string_equal(res->reason, "provider_error");
	al_result_free(res);

	adm = admit(f, "{\"language\": \"sh\", \"code\": \"x\"}", &refused);
	al_finish_options start = {.refusal = "start_failed"};
	assert_int_equal(al_host_finish(f->host, adm, NULL, &start, &res), 0);
	assert_int_equal(res->outcome, AL_OUTCOME_UNAVAILABLE);
	assert_string_equal(res->reason, "start_failed");
	assert_false(res->has_exit_code);
	al_result_free(res);

	/* A refusal at admission comes back as a result, announced. */
	announced = 0;
	assert_null(admit(f, "{\"language\": \"ruby\", \"code\": \"x\"}",
			  &refused));
	assert_int_equal(refused->outcome, AL_OUTCOME_DENIED);
	assert_int_equal(announced, 1);
	al_result_free(refused);
}

static void test_resume_lost_keeps_the_key(void **state)
{
	fx *f = *state;
	static const char req[] =
		"{\"language\": \"sh\", \"code\": \"x\", \"idempotency_key\": "
		"\"k1\"}";
	al_result *res = NULL, *refused = NULL;
	al_admission *adm = admit(f, req, &refused);
	char id[40];
	snprintf(id, sizeof(id), "%s", al_admission_run_id(adm));
	char *canonical = strdup(al_admission_request_json(adm));
	/* The process that admitted it dies: nothing is finished. */
	al_admission_free(adm);

	/* A later process resumes it from what was persisted. */
	al_admission *again = NULL;
	al_resume_info info = {.run_id = id, .tenant = "acme",
			       .principal = "tester",
			       .request_json = canonical, .provider = "tp",
			       .admitted_ms = al_now_ms()};
	assert_int_equal(al_host_resume(f->host, &info, &again, NULL), 0);
	al_finish_options o = {.launched = true, .refusal = "lost"};
	assert_int_equal(al_host_finish(f->host, again, NULL, &o, &res), 0);
	assert_int_equal(res->outcome, AL_OUTCOME_UNAVAILABLE);
	assert_string_equal(res->reason, "lost");
	assert_string_equal(res->run_id, id);
	al_result_free(res);
	assert_int_equal(count_in_audit(f, id, "run.finished"), 1);

	/* The key keeps the lost result: no second admission. */
	assert_null(admit(f, req, &refused));
	assert_string_equal(refused->run_id, id);
	assert_string_equal(refused->reason, "lost");
	al_result_free(refused);

	/* A finish that takes another process's final result writes no
	 * second run.finished. */
	al_resume_info info2 = info;
	assert_int_equal(al_host_resume(f->host, &info2, &again, NULL), 0);
	al_result *fin = ran(id, "done");
	al_finish_options fo = {.launched = true, .as_final = true};
	assert_int_equal(al_host_finish(f->host, again, fin, &fo, &res), 0);
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	al_result_free(res);
	assert_int_equal(count_in_audit(f, id, "run.finished"), 1);
	/* A bad persisted request is refused, not resumed. */
	al_resume_info bad = info;
	bad.request_json = "{\"language\": 1}";
	al_error *err = NULL;
	assert_true(al_host_resume(f->host, &bad, &again, &err) < 0);
	al_error_free(err);
	free(canonical);
	assert_int_equal(n_execute, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_admit_then_finish,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_bad_shape_and_refusals,
						fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_resume_lost_keeps_the_key,
						fx_setup, fx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
