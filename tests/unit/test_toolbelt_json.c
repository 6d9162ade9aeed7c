/* The toolbelt's fields: grant.toolbelt / grant.operations in requests and
 * configuration, the result's events / declaration / host_calls, the
 * facts' flags, and the shape rule for a declared failure. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include <airlock/contract.h>
#include <airlock/error.h>
#include <airlock/host.h>
#include <airlock/json.h>

#include "host/operations.h"

static al_request *parse_req(const char *json, const char **reason)
{
	al_request *req = NULL;
	al_error *err = NULL;
	int rc = al_request_from_json(json, strlen(json), &req, &err);
	static char why[128];
	snprintf(why, sizeof(why), "%s", rc < 0 ? al_error_get_reason(err) : "");
	*reason = why;
	al_error_free(err);
	return req;
}

static void test_grant_parse_and_emit(void **state)
{
	(void)state;
	const char *why;
	al_request *req = parse_req(
		"{\"language\":\"sh\",\"code\":\"true\",\"grant\":{\"toolbelt\":true,"
		"\"operations\":[\"zeta\",\"alpha.v1\"]}}", &why);
	assert_non_null(req);
	assert_true(req->grant.toolbelt);
	assert_int_equal(req->grant.n_operations, 2);
	assert_string_equal(req->grant.operations[0], "alpha.v1");
	char *text = al_request_to_json(req);
	assert_non_null(strstr(text, "\"toolbelt\":true"));
	assert_non_null(strstr(text, "\"operations\":[\"alpha.v1\",\"zeta\"]"));
	al_request *dup = al_request_dup(req);
	assert_int_equal(dup->grant.n_operations, 2);
	al_request_free(dup);
	free(text);
	al_request_free(req);

	/* Without them a request prints as before. */
	req = parse_req("{\"language\":\"sh\",\"code\":\"true\"}", &why);
	text = al_request_to_json(req);
	assert_null(strstr(text, "toolbelt"));
	assert_null(strstr(text, "operations"));
	free(text);
	al_request_free(req);
}

static void test_grant_refusals(void **state)
{
	(void)state;
	static const struct {
		const char *grant, *reason;
	} bad[] = {
		{"{\"operations\":[\"a\"]}", "grant.operations"},
		{"{\"toolbelt\":1}", "grant.toolbelt"},
		{"{\"toolbelt\":true,\"operations\":\"a\"}", "grant.operations"},
		{"{\"toolbelt\":true,\"operations\":[\"a b\"]}",
		 "grant.operations[0]"},
		{"{\"toolbelt\":true,\"operations\":[\"a\",\"a\"]}",
		 "grant.operations[1]"},
		{"{\"toolbelt\":true,\"operations\":[7]}", "grant.operations[0]"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char json[256];
		const char *why;
		snprintf(json, sizeof(json),
			 "{\"language\":\"sh\",\"code\":\"true\",\"grant\":%s}",
			 bad[i].grant);
		al_request *req = parse_req(json, &why);
		assert_null(req);
		assert_string_equal(why, bad[i].reason);
	}
}

static void test_result_round_trip_and_shape(void **state)
{
	(void)state;
	al_result *r = al_result_new();
	strcpy(r->run_id, "run-1");
	r->has_exit_code = true;
	r->exit_code = 0;
	assert_int_equal(al_result_set_outcome(r, AL_OUTCOME_FAILED, "declared"), 0);
	/* A failure with exit 0 needs the declaration. */
	assert_int_equal(al_result_check_shape(r), -EPROTO);
	r->declaration_json = strdup("{\"outcome\":\"failed\",\"reason\":\"r\"}");
	r->events_json = strdup("[{\"seq\":1,\"type\":\"t\",\"data\":[1],\"at_ms\":5}]");
	r->host_calls_json = strdup("[{\"operation\":\"op\",\"outcome\":\"denied\"}]");
	assert_int_equal(al_result_check_shape(r), 0);
	char *text = al_result_to_json(r, 0);
	al_result *back = NULL;
	assert_int_equal(al_result_from_json(text, strlen(text), &back, NULL), 0);
	assert_string_equal(back->declaration_json, r->declaration_json);
	assert_string_equal(back->events_json, r->events_json);
	assert_string_equal(back->host_calls_json, r->host_calls_json);
	free(text);
	al_result_free(back);
	/* Another reason with exit 0 stays malformed. */
	assert_int_equal(al_result_set_outcome(r, AL_OUTCOME_FAILED, NULL), 0);
	assert_int_equal(al_result_check_shape(r), -EPROTO);
	al_result_free(r);

	const char *bad = "{\"run_id\":\"x\",\"outcome\":\"completed\","
			  "\"declaration\":[1]}";
	assert_int_equal(al_result_from_json(bad, strlen(bad), &back, NULL),
			 -EINVAL);
}

static void test_facts_flags(void **state)
{
	(void)state;
	al_facts *f = al_facts_new("p", AL_SAFETY_SANDBOXED);
	char *text = al_facts_to_json(f, 0);
	assert_null(strstr(text, "toolbelt"));
	free(text);
	f->toolbelt = f->inject = true;
	char *names[] = {"a", "b"};
	f->host_api = calloc(3, sizeof(char *));
	f->host_api[0] = strdup(names[0]);
	f->host_api[1] = strdup(names[1]);
	f->n_host_api = 2;
	text = al_facts_to_json(f, 0);
	assert_non_null(strstr(text, "\"toolbelt\":true"));
	assert_null(strstr(text, "interrupt"));
	al_facts *back = NULL;
	assert_int_equal(al_facts_from_json(text, strlen(text), &back, NULL), 0);
	assert_true(back->toolbelt && back->inject && !back->interrupt);
	assert_int_equal(back->n_host_api, 2);
	al_facts *dup = al_facts_dup(back);
	assert_string_equal(dup->host_api[1], "b");
	al_facts_free(dup);
	al_facts_free(back);
	al_facts_free(f);
	free(text);
}

static int load(const char *tenant_extra, al_config **cfg, const char **why)
{
	char json[1024];
	static char reason[160];
	al_error *err = NULL;
	snprintf(json, sizeof(json),
		 "{\"providers\": [\"sandbox\"], \"tenants\": {\"t\": "
		 "{\"languages\": [\"sh\"], %s}}}", tenant_extra);
	int rc = al_config_parse(json, strlen(json), cfg, &err);
	snprintf(reason, sizeof(reason), "%s", rc < 0 ? al_error_get_reason(err) : "");
	*why = reason;
	al_error_free(err);
	return rc;
}

static void test_config_operations(void **state)
{
	(void)state;
	al_config *cfg = NULL;
	const char *why;
	assert_int_equal(
		load("\"operations\": {\"n\": {\"kind\": \"webhook\", \"url\": "
		     "\"http://127.0.0.1:1/x\"}}, \"grant\": {\"toolbelt\": "
		     "true, \"operations\": [\"n\"]}", &cfg, &why), 0);
	al_config_free(cfg);
	static const struct {
		const char *extra, *reason;
	} bad[] = {
		{"\"grant\": {\"operations\": [\"n\"]}", "tenants.t.grant"},
		{"\"operations\": {\"n\": {\"kind\": \"ftp\"}}",
		 "tenants.t.operations.n"},
		{"\"operations\": {\"n\": {\"kind\": \"webhook\", \"url\": "
		 "\"file:///etc/passwd\"}}", "tenants.t.operations.n"},
		{"\"operations\": {\"n\": {\"kind\": \"webhook\", \"url\": "
		 "\"http://x/\", \"timeout_ms\": 0}}", "tenants.t.operations.n"},
		{"\"operations\": {\"n\": {\"kind\": \"module\", \"path\": "
		 "\"rel.so\"}}", "tenants.t.operations.n"},
		{"\"operations\": {\"n\": {\"kind\": \"module\", \"path\": "
		 "\"/x.so\", \"symbol\": \"a.b\"}}", "tenants.t.operations.n"},
		{"\"operations\": {\"bad name\": {\"kind\": \"module\"}}",
		 "tenants.t.operations"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cfg = NULL;
		assert_int_equal(load(bad[i].extra, &cfg, &why), -EINVAL);
		assert_string_equal(why, bad[i].reason);
	}
}

static void test_operations_subset(void **state)
{
	(void)state;
	char *ops = NULL, *sub = NULL;
	json_t *v = json_loads("{\"a\": {\"kind\": \"module\", \"path\": \"/a.so\"},"
			       " \"b\": {\"kind\": \"module\", \"path\": \"/b.so\"}}",
			       0, NULL);
	assert_int_equal(al_operations_parse(v, "ops", &ops, NULL), 0);
	char *names[] = {"b"};
	al_grant g = {.toolbelt = true, .operations = names, .n_operations = 1};
	assert_int_equal(al_operations_subset(ops, &g, &sub), 0);
	assert_string_equal(sub, "{\"b\":{\"kind\":\"module\",\"path\":\"/b.so\","
				 "\"symbol\":\"airlock_operation\"}}");
	json_decref(v);
	free(ops);
	free(sub);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grant_parse_and_emit),
		cmocka_unit_test(test_grant_refusals),
		cmocka_unit_test(test_result_round_trip_and_shape),
		cmocka_unit_test(test_facts_flags),
		cmocka_unit_test(test_config_operations),
		cmocka_unit_test(test_operations_subset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
