/* The service's bearer tokens (auth) and its URL routing (http.c's
 * route_of and method rules, included here since they are private to
 * that file): each token finds its tenant and nothing else does; each
 * path finds its route and a malformed id none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <airlock/json.h>

#include "server/auth.h"
#include "../../src/server/http.c"

static const char *const CONFIG =
	"{\"tenants\": {\"acme\": {\"languages\": \"*\"},"
	"               \"beta\": {\"languages\": \"*\"}},"
	" \"providers\": [\"sandbox\"]}";

static al_config *config(void)
{
	al_config *cfg = NULL;
	al_error *err = NULL;
	assert_int_equal(al_config_parse(CONFIG, strlen(CONFIG), &cfg, &err), 0);
	assert_null(err);
	return cfg;
}

/* {"tokens": {sha256(a): "acme", sha256(b): "beta"}} */
static char *tokens_json(const char *a, const char *b, const char *tenant_b)
{
	char ha[65], hb[65], *out = NULL;
	al_sha256_hex(a, strlen(a), ha);
	al_sha256_hex(b, strlen(b), hb);
	assert_true(asprintf(&out, "{\"tokens\": {\"%s\": \"acme\", \"%s\": \"%s\"}}",
			     ha, hb, tenant_b) > 0);
	return out;
}

static void test_tokens_to_tenants(void **state)
{
	(void)state;
	al_config *cfg = config();
	al_auth *auth = NULL;
	al_error *err = NULL;
	char *json = tokens_json("token-a", "token-b", "beta");
	char principal[AL_AUTH_PRINCIPAL_LEN];
	assert_int_equal(al_auth_from_config(json, strlen(json), cfg, &auth, &err), 0);
	assert_non_null(auth);
	assert_string_equal(al_auth_tenant(auth, "Bearer token-a", principal), "acme");
	assert_int_equal(strncmp(principal, "token:", 6), 0);
	assert_int_equal(strlen(principal), 6 + 12);
	/* The principal names the hash, never the token. */
	assert_null(strstr(principal, "token-a"));
	assert_string_equal(al_auth_tenant(auth, "Bearer token-b", NULL), "beta");
	assert_null(al_auth_tenant(auth, "Bearer token-c", principal));
	assert_null(al_auth_tenant(auth, "token-a", principal));
	assert_null(al_auth_tenant(auth, "Basic token-a", principal));
	assert_null(al_auth_tenant(auth, NULL, principal));
	assert_non_null(al_auth_any_tenant(auth));
	al_auth_free(auth);
	free(json);
	al_config_free(cfg);
}

static void test_no_tokens(void **state)
{
	(void)state;
	al_config *cfg = config();
	al_auth *auth = (al_auth *)1;
	al_error *err = NULL;
	assert_int_equal(al_auth_from_config("{}", 2, cfg, &auth, &err), 0);
	assert_null(auth);
	al_config_free(cfg);
}

static void test_bad_tokens(void **state)
{
	(void)state;
	al_config *cfg = config();
	al_auth *auth = NULL;
	al_error *err = NULL;
	/* A tenant the configuration does not have. */
	char *json = tokens_json("token-a", "token-b", "nobody");
	assert_true(al_auth_from_config(json, strlen(json), cfg, &auth, &err) < 0);
	assert_null(auth);
	assert_non_null(err);
	assert_int_equal(al_error_get_code(err), AL_ERR_INVALID_CONFIG);
	/* The reason names the entry, never its hash. */
	char hb[65];
	al_sha256_hex("token-b", 7, hb);
	assert_null(strstr(al_error_get_message(err), hb));
	al_error_free(err);
	err = NULL;
	free(json);
	static const char *const bad[] = {
		"{\"tokens\": {}}",
		"{\"tokens\": []}",
		"{\"tokens\": {\"nothex\": \"acme\"}}",
		"not json",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_true(al_auth_from_config(bad[i], strlen(bad[i]), cfg,
						&auth, &err) < 0);
		assert_null(auth);
		assert_non_null(err);
		assert_int_equal(al_error_get_code(err), AL_ERR_INVALID_CONFIG);
		al_error_free(err);
		err = NULL;
	}
	al_config_free(cfg);
}

static void test_routes(void **state)
{
	(void)state;
	char id[40] = "", art[33] = "";
	assert_int_equal(route_of("/v1/health", id, art), R_HEALTH);
	assert_int_equal(route_of("/metrics", id, art), R_METRICS);
	assert_int_equal(route_of("/v1/capabilities", id, art), R_CAPABILITIES);
	assert_int_equal(route_of("/v1/runs", id, art), R_RUNS);
	assert_int_equal(route_of("/v1/runs/abc-1", id, art), R_RUN);
	assert_string_equal(id, "abc-1");
	assert_int_equal(route_of("/v1/runs/r2/events", id, art), R_RUN_EVENTS);
	assert_string_equal(id, "r2");
	assert_int_equal(route_of("/v1/runs/r2/interrupt", id, art), R_RUN_INTERRUPT);
	assert_int_equal(route_of("/v1/runs/r2/inbox", id, art), R_RUN_INBOX);
	assert_int_equal(route_of("/v1/runs/r2/other", id, art), R_NONE);
	assert_int_equal(route_of("/v1/runs/../etc", id, art), R_NONE);
	assert_int_equal(route_of("/v1/runs/", id, art), R_NONE);
	assert_int_equal(route_of("/v1/run", id, art), R_NONE);
	assert_int_equal(route_of("/", id, art), R_NONE);
	assert_int_equal(route_of("/v1/health/", id, art), R_NONE);
}

static void test_methods(void **state)
{
	(void)state;
	assert_true(method_allowed(R_RUNS, "GET"));
	assert_true(method_allowed(R_RUNS, "POST"));
	assert_true(method_allowed(R_RUN, "HEAD"));
	assert_false(method_allowed(R_RUN, "POST"));
	assert_false(method_allowed(R_RUN, "DELETE"));
	assert_true(method_allowed(R_RUN_INTERRUPT, "POST"));
	assert_false(method_allowed(R_RUN_INTERRUPT, "GET"));
	assert_true(method_allowed(R_RUN_INBOX, "POST"));
	assert_false(method_allowed(R_HEALTH, "PUT"));
	assert_string_equal(allowed_methods(R_RUNS), "GET, HEAD, POST");
	assert_string_equal(allowed_methods(R_RUN_INBOX), "POST");
	assert_string_equal(allowed_methods(R_HEALTH), "GET, HEAD");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tokens_to_tenants),
		cmocka_unit_test(test_no_tokens),
		cmocka_unit_test(test_bad_tokens),
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_methods),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
