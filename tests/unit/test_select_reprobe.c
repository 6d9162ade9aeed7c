/* Provider selection (src/host/select.c): every new handle is preceded by
 * a probe of its own, and a handle whose release fails is quarantined —
 * never handed out again, its candidate unavailable ("quarantined") until
 * a probe of it succeeds.  A probe that only judges a request is scoped
 * to its language (core/probe_scope.h); a new handle's own is not.  Also:
 * an unacknowledged module is not loaded, and require_provider stops the
 * selector from starting. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <airlock/airlock.h>

#include "core/probe_scope.h"
#include "host/config.h"
#include "host/select.h"

/* Calls in order, one letter each: p(robe) e(nsure) h(ealth) r(elease). */
static char calls[256];
static size_t n_calls;
/* Probes from this index on report unavailable, until `avail_again`. */
static size_t unavail_from = SIZE_MAX, avail_again = SIZE_MAX;
static size_t n_probes;
static bool healthy = true;
/* The scope each probe saw, one letter each: the language's first, or
 * '-' for none. */
static char scopes[64];

static void called(char c)
{
	if (n_calls + 1 < sizeof(calls))
		calls[n_calls++] = c;
	calls[n_calls] = '\0';
}

static int tq_probe(const char *config_json, al_facts **out, al_error **err)
{
	(void)config_json;
	(void)err;
	called('p');
	size_t i = n_probes++;
	const char *scope = al_probe_scope_language();
	if (i + 1 < sizeof(scopes)) {
		scopes[i] = scope != NULL ? scope[0] : '-';
		scopes[i + 1] = '\0';
	}
	al_facts *f = al_facts_new("tq", AL_SAFETY_SANDBOXED);
	if (!f)
		return -ENOMEM;
	f->available = i < unavail_from || i >= avail_again;
	if (!f->available)
		f->unavailable_reason = strdup("backend_down");
	f->limits = AL_LIMIT__ALL;
	f->network = 1u << AL_NETWORK_NONE;
	f->workspace = 7;
	al_facts_add_language(f, "sh", "sh", "5.2", "/bin/sh");
	*out = f;
	return 0;
}

static int tq_ensure(const char *config_json, al_provider_handle **h,
		     al_error **err)
{
	(void)config_json;
	(void)err;
	called('e');
	*h = (al_provider_handle *)calloc(1, 16);
	return *h ? 0 : -ENOMEM;
}

static int tq_health(al_provider_handle *h, al_error **err)
{
	(void)h;
	(void)err;
	called('h');
	return healthy ? 0 : -EIO;
}

static int tq_execute(al_provider_handle *h, const al_exec *exec,
		      al_result *res, al_error **err)
{
	(void)h;
	(void)exec;
	(void)res;
	(void)err;
	return -EIO;
}

/* Always fails, but frees the handle (as the example does). */
static int tq_release(al_provider_handle *h, al_error **err)
{
	(void)err;
	called('r');
	free(h);
	return -EIO;
}

static const al_provider_ops tq = {
	AL_ABI_HEADER(al_provider_ops),
	.id = "tq",
	.probe = tq_probe,
	.ensure = tq_ensure,
	.health = tq_health,
	.execute = tq_execute,
	.release = tq_release,
};
static const al_provider_ops *const extra[] = {&tq, NULL};

static al_config *config(const char *json)
{
	al_config *cfg = NULL;
	al_error *err = NULL;
	if (al_config_parse(json, strlen(json), &cfg, &err) < 0)
		fail_msg("config: %s", al_error_get_message(err));
	return cfg;
}

static const char base_cfg[] =
	"{\"acknowledged_providers\": [\"tq\"], \"providers\": [\"tq\"], "
	"\"tenants\": {\"t\": {\"languages\": \"*\"}}}";

static al_request *request(void)
{
	al_request *req = al_request_new();
	free(req->language);
	free(req->code.data);
	req->language = strdup("sh");
	req->code.data = (unsigned char *)strdup("true");
	req->code.len = 4;
	return req;
}

static void reset(void)
{
	n_calls = 0;
	calls[0] = '\0';
	n_probes = 0;
	scopes[0] = '\0';
	unavail_from = avail_again = SIZE_MAX;
	healthy = true;
}

/* Selects; returns 0 (chosen, handle given back) or 1 with *detail the
 * candidate's skip detail. */
static int pick(al_selector *s, const al_request *req, char *detail,
		size_t len)
{
	al_selection sel;
	int rc = al_select(s, req, 0, &sel);
	assert_true(rc == 0 || rc == 1);
	if (detail)
		snprintf(detail, len, "%s",
			 sel.n_skips ? sel.skips[0].detail : "");
	if (rc == 0)
		al_selector_put(s, sel.ref);
	al_selection_clear(&sel);
	return rc;
}

/* Every new handle gets a whole probe of its own before its ensure; the
 * probes that only judge a request for a handle already made look at the
 * request's language alone. */
static void test_every_new_handle_is_reprobed(void **state)
{
	(void)state;
	reset();
	al_config *cfg = config(base_cfg);
	al_selector s;
	assert_int_equal(al_selector_init(&s, cfg, extra, NULL, false, NULL),
			 0);
	al_request *req = request();
	/* The first run: no handle yet, so the selection probe is made
	 * under the ensure lock and is the handle's own: everything; then
	 * its ensure. */
	assert_int_equal(pick(&s, req, NULL, 0), 0);
	assert_string_equal(calls, "pe");
	/* A cached handle: selection probe (scoped) and health only. */
	assert_int_equal(pick(&s, req, NULL, 0), 0);
	assert_string_equal(calls, "peph");
	/* Unhealthy: retired, released (fails: quarantined), and the new
	 * handle gets its own whole probe before its ensure. */
	healthy = false;
	assert_int_equal(pick(&s, req, NULL, 0), 0);
	assert_string_equal(calls, "pephphrpe");
	assert_string_equal(scopes, "-ss-");
	assert_int_equal(al_selector_quarantined(&s), 1);
	healthy = true;
	/* A toolchain constrained by name may be another language's: the
	 * judgement then reads every language's facts. */
	al_toolchain_req *tc = calloc(1, sizeof(*tc));
	assert_non_null(tc);
	tc->toolchain = strdup("sh");
	tc->constraint = strdup(">=5");
	req->toolchain = tc;
	req->n_toolchain = 1;
	assert_int_equal(pick(&s, req, NULL, 0), 0);
	assert_string_equal(scopes, "-ss--");
	/* No scope is left behind on the thread. */
	assert_null(al_probe_scope_language());
	al_selector_destroy(&s);
	al_request_free(req);
	al_config_free(cfg);
}

static void test_quarantine_until_probe_succeeds(void **state)
{
	(void)state;
	reset();
	al_config *cfg = config(base_cfg);
	al_selector s;
	char detail[96];
	assert_int_equal(al_selector_init(&s, cfg, extra, NULL, false, NULL),
			 0);
	al_request *req = request();
	assert_int_equal(pick(&s, req, NULL, 0), 0); /* probe 0 */
	/* Probe 1 (selection) is good, the health check fails, release
	 * fails, and probe 2 (the new handle's) sees the backend down:
	 * no handle, and the candidate stays quarantined. */
	healthy = false;
	unavail_from = 2;
	avail_again = 4;
	assert_int_equal(pick(&s, req, detail, sizeof(detail)), 1);
	assert_string_equal(detail, "quarantined");
	assert_int_equal(al_selector_quarantined(&s), 1);
	/* Probe 3 still down: the candidate is quarantined, and says so. */
	assert_int_equal(pick(&s, req, detail, sizeof(detail)), 1);
	assert_string_equal(detail, "quarantined");
	/* Probe 4 good: out of quarantine, and (made under the ensure
	 * lock, no handle being current) the new handle's own probe. */
	healthy = true;
	assert_int_equal(pick(&s, req, NULL, 0), 0);
	assert_string_equal(calls, "pephrpppe");
	assert_int_equal(pick(&s, req, NULL, 0), 0);
	assert_string_equal(calls, "pephrpppeph");
	al_selector_destroy(&s);
	/* The healthy handle's release at the end failed too. */
	al_request_free(req);
	al_config_free(cfg);
}

static void test_unacknowledged_module_is_not_loaded(void **state)
{
	(void)state;
	/* The file does not exist: loading it would fail the init. */
	al_config *cfg = config(
		"{\"providers\": [{\"provider\": \"acme\", \"module\": "
		"\"/nonexistent/acme.so\"}], "
		"\"tenants\": {\"t\": {\"languages\": \"*\"}}}");
	al_selector s;
	assert_int_equal(al_selector_init(&s, cfg, NULL, "acme", true, NULL),
			 0);
	assert_false(al_selector_acknowledged(&s, 0));
	al_request *req = request();
	al_selection sel;
	assert_int_equal(al_select(&s, req, 0, &sel), 1);
	assert_int_equal(sel.n_skips, 1);
	assert_int_equal(sel.skips[0].kind, AL_SKIP_NOT_ACKNOWLEDGED);
	al_selection_clear(&sel);
	al_selector_destroy(&s);
	al_config_free(cfg);
	/* Acknowledged: now it is loaded, and the missing file is an error
	 * that stops the selector. */
	cfg = config("{\"acknowledged_providers\": [\"acme\"], "
		     "\"providers\": [{\"provider\": \"acme\", \"module\": "
		     "\"/nonexistent/acme.so\"}], "
		     "\"tenants\": {\"t\": {\"languages\": \"*\"}}}");
	al_error *err = NULL;
	assert_true(al_selector_init(&s, cfg, NULL, NULL, false, &err) < 0);
	assert_string_equal(al_error_get_reason(err), "module");
	assert_non_null(strstr(al_error_get_message(err), "cannot find"));
	al_error_free(err);
	al_selector_destroy(&s);
	al_request_free(req);
	al_config_free(cfg);
}

static void test_require_provider(void **state)
{
	(void)state;
	al_selector s;
	al_error *err = NULL;
	/* First, acknowledged: starts. */
	al_config *cfg = config(
		"{\"acknowledged_providers\": [\"tq\"], \"require_provider\": "
		"\"tq\", \"providers\": [\"tq\", \"sandbox\"], "
		"\"tenants\": {\"t\": {\"languages\": \"*\"}}}");
	assert_int_equal(al_selector_init(&s, cfg, extra, NULL, false, NULL),
			 0);
	al_selector_destroy(&s);
	/* Another provider forced: refused. */
	assert_true(al_selector_init(&s, cfg, extra, "sandbox", true, &err) <
		    0);
	assert_string_equal(al_error_get_reason(err), "require_provider");
	al_error_free(err);
	err = NULL;
	al_selector_destroy(&s);
	al_config_free(cfg);
	/* Not first: refused. */
	cfg = config("{\"acknowledged_providers\": [\"tq\"], "
		     "\"require_provider\": \"tq\", "
		     "\"providers\": [\"sandbox\", \"tq\"], "
		     "\"tenants\": {\"t\": {\"languages\": \"*\"}}}");
	assert_true(al_selector_init(&s, cfg, extra, NULL, false, &err) < 0);
	assert_non_null(strstr(al_error_get_message(err), "comes first"));
	al_error_free(err);
	err = NULL;
	al_selector_destroy(&s);
	al_config_free(cfg);
	/* Not acknowledged: refused. */
	cfg = config("{\"require_provider\": \"tq\", \"providers\": [\"tq\"], "
		     "\"tenants\": {\"t\": {\"languages\": \"*\"}}}");
	assert_true(al_selector_init(&s, cfg, extra, NULL, false, &err) < 0);
	assert_non_null(strstr(al_error_get_message(err),
			       "acknowledged_providers"));
	al_error_free(err);
	al_selector_destroy(&s);
	al_config_free(cfg);
	/* Naming no configured provider is a configuration error. */
	const char *bad = "{\"require_provider\": \"nope\", "
			  "\"providers\": [\"sandbox\"], "
			  "\"tenants\": {\"t\": {\"languages\": \"*\"}}}";
	err = NULL;
	assert_true(al_config_parse(bad, strlen(bad), &cfg, &err) < 0);
	assert_string_equal(al_error_get_reason(err), "require_provider");
	al_error_free(err);
}

static void test_module_config_checked(void **state)
{
	(void)state;
	static const char *const bad[][2] = {
		{"{\"providers\": [{\"provider\": \"acme\", \"module\": "
		 "\"acme.so\"}], \"tenants\": {\"t\": {\"languages\": \"*\"}}}",
		 "providers[0].module"},
		{"{\"providers\": [{\"provider\": \"sandbox\", \"module\": "
		 "\"/x/acme.so\"}], \"tenants\": {\"t\": {\"languages\": "
		 "\"*\"}}}",
		 "providers[0].provider"},
		{"{\"providers\": [{\"provider\": \"acme\", \"module\": 7}], "
		 "\"tenants\": {\"t\": {\"languages\": \"*\"}}}",
		 "providers[0].module"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		al_config *cfg = NULL;
		al_error *err = NULL;
		assert_true(al_config_parse(bad[i][0], strlen(bad[i][0]), &cfg,
					    &err) < 0);
		assert_int_equal(al_error_get_code(err), AL_ERR_INVALID_CONFIG);
		assert_string_equal(al_error_get_reason(err), bad[i][1]);
		al_error_free(err);
	}
	/* The loader refuses a relative path and a built-in's name too. */
	const al_provider_ops *ops = NULL;
	al_error *err = NULL;
	assert_true(al_provider_module_load("acme", "acme.so", &ops, &err) < 0);
	assert_int_equal(al_error_get_code(err), AL_ERR_INVALID_CONFIG);
	al_error_free(err);
	err = NULL;
	assert_true(al_provider_module_load("local", "/x/l.so", &ops, &err) <
		    0);
	assert_non_null(strstr(al_error_get_message(err), "built-in"));
	al_error_free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_new_handle_is_reprobed),
		cmocka_unit_test(test_quarantine_until_probe_succeeds),
		cmocka_unit_test(test_unacknowledged_module_is_not_loaded),
		cmocka_unit_test(test_require_provider),
		cmocka_unit_test(test_module_config_checked),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
