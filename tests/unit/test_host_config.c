/* Configuration parsing: the documented example loads; unknown keys, wrong
 * types and bad values are refused with the key path, never the value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <airlock/airlock.h>

#include "host/config.h"
#include "host/config_env.h"

static void expect_bad(const char *json, const char *path)
{
	al_config *cfg = NULL;
	al_error *err = NULL;
	int rc = al_config_parse(json, strlen(json), &cfg, &err);
	assert_true(rc < 0);
	assert_null(cfg);
	assert_int_equal(al_error_get_code(err), AL_ERR_INVALID_CONFIG);
	assert_string_equal(al_error_get_reason(err), path);
	/* The offending value never appears in the message. */
	assert_null(strstr(al_error_get_message(err), "SECRETVALUE"));
	al_error_free(err);
}

static void test_example_loads(void **state)
{
	(void)state;
	al_config *cfg = NULL;
	al_error *err = NULL;
	int rc = al_config_load("examples/config.json", &cfg, &err);
	if (rc < 0)
		fail_msg("examples/config.json: %s (%s)",
			 al_error_get_message(err), al_error_get_reason(err));
	assert_int_equal(cfg->n_candidates, 2);
	assert_string_equal(cfg->candidates[0].provider, "sandbox");
	assert_string_equal(cfg->candidates[1].provider, "local");
	assert_string_equal(cfg->candidates[1].config_json, "{}");
	const al_cfg_tenant *acme = al_config_tenant(cfg, "acme");
	assert_non_null(acme);
	assert_true(al_cfg_tenant_allows_language(acme, "python"));
	assert_false(al_cfg_tenant_allows_language(acme, "ruby"));
	assert_int_equal(acme->ceilings.memory_bytes, 536870912);
	/* every limit but stack_bytes, which is newer than the example */
	assert_int_equal(acme->ceilings.set,
			 AL_LIMIT__ALL & ~AL_LIMIT_STACK_BYTES);
	assert_int_equal(acme->n_pins, 2);
	assert_int_equal(acme->pins[0].kind, AL_PIN_PLAN);
	assert_int_equal(acme->pins[1].kind, AL_PIN_CODE);
	assert_string_equal(acme->pins[1].language, "python");
	assert_true(al_cfg_tenant_allows_env(acme, "PYTHONPATH"));
	assert_false(al_cfg_tenant_allows_env(acme, "NODE_OPTIONS"));
	assert_int_equal(acme->concurrency, 2);
	assert_int_equal(cfg->concurrency, 4);
	assert_int_equal(cfg->grace_ms, 5000);
	assert_int_equal(cfg->secrets_kind, AL_SECRETS_DIR);
	assert_true(al_config_tenant(cfg, "default")->all_languages);
	al_config_free(cfg);
}

static void test_default(void **state)
{
	(void)state;
	al_config *cfg = NULL;
	assert_int_equal(al_config_default(&cfg, NULL), 0);
	assert_true(cfg->execution_enabled);
	assert_int_equal(cfg->n_candidates, 1);
	assert_string_equal(cfg->candidates[0].provider, "sandbox");
	const al_cfg_tenant *t = al_config_tenant(cfg, "default");
	assert_non_null(t);
	assert_true(t->all_languages);
	/* Every mode may be granted; providers offer only what they enforce. */
	assert_int_equal(t->grant.network, (1u << AL_NETWORK_NONE) |
						   (1u << AL_NETWORK_LOOPBACK) |
						   (1u << AL_NETWORK_HOST));
	assert_true(t->grant.workspace & (1u << AL_WORKSPACE_RW));
	assert_int_equal(t->grant.n_secrets, 0);
	assert_int_equal(cfg->audit_finished_sync, AL_AUDIT_SYNC_AUTO);
	al_config_free(cfg);
}

/* audit.finished_synchronous: each word, and nothing else. */
static void test_audit_sync(void **state)
{
	(void)state;
	static const struct {
		const char *word;
		al_audit_sync want;
	} cases[] = {{"auto", AL_AUDIT_SYNC_AUTO},
		     {"full", AL_AUDIT_SYNC_FULL},
		     {"normal", AL_AUDIT_SYNC_NORMAL}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char json[160];
		snprintf(json, sizeof(json),
			 "{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}, "
			 "\"audit\": {\"finished_synchronous\": \"%s\"}}",
			 cases[i].word);
		al_config *cfg = NULL;
		assert_int_equal(al_config_parse(json, strlen(json), &cfg, NULL),
				 0);
		assert_int_equal(cfg->audit_finished_sync, cases[i].want);
		al_config_free(cfg);
	}
}

#define T(body) "{\"providers\": [\"sandbox\"], \"tenants\": {\"acme\": " body "}"
#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* A tenant that names no ceiling still has one for every limit but
 * workspace_bytes and socket_bytes (the sandbox bounds those itself) and
 * stack_bytes (a run keeps the stack limit it inherits unless asked); a
 * configured one replaces the built-in one alone. */
static void test_default_ceilings(void **state)
{
	(void)state;
	al_config *cfg = NULL;
	assert_int_equal(al_config_default(&cfg, NULL), 0);
	const al_cfg_tenant *t = al_config_tenant(cfg, "default");
	assert_int_equal(t->ceilings_configured, 0);
	assert_int_equal(t->ceilings.set,
			 AL_LIMIT__ALL & ~(AL_LIMIT_WORKSPACE_BYTES |
					   AL_LIMIT_SOCKET_BYTES |
					   AL_LIMIT_STACK_BYTES));
	assert_int_equal(t->ceilings.wall_ms, AL_CFG_CEIL_WALL_MS);
	assert_int_equal(t->ceilings.memory_bytes, AL_CFG_CEIL_MEMORY_BYTES);
	assert_int_equal(t->ceilings.pids, AL_CFG_CEIL_PIDS);
	assert_int_equal(t->argv_bytes_max, AL_CFG_CEIL_ARGV_BYTES);
	assert_int_equal(t->env_bytes_max, AL_CFG_CEIL_ENV_BYTES);
	al_config_free(cfg);
	const char *txt = T("{\"ceilings\": {\"memory_bytes\": 8589934592, "
			    "\"env_bytes\": 100}}}");
	assert_int_equal(al_config_parse(txt, strlen(txt), &cfg, NULL), 0);
	t = al_config_tenant(cfg, "acme");
	assert_int_equal(t->ceilings_configured, AL_LIMIT_MEMORY_BYTES);
	assert_int_equal(t->ceilings.memory_bytes, 8589934592ull);
	assert_int_equal(t->ceilings.pids, AL_CFG_CEIL_PIDS);
	assert_int_equal(t->env_bytes_max, 100);
	assert_int_equal(t->argv_bytes_max, AL_CFG_CEIL_ARGV_BYTES);
	al_config_free(cfg);
}

static void test_rejections(void **state)
{
	(void)state;
	expect_bad("{\"providers\": [\"sandbox\"], \"tenants\": {\"a\": {}}, "
		   "\"bogus\": 1}",
		   "bogus");
	expect_bad(T("{\"ceilings\": {\"memory_bytes\": \"SECRETVALUE\"}}}"),
		   "tenants.acme.ceilings.memory_bytes");
	expect_bad(T("{\"ceilings\": {\"memory_bytes\": -1}}}"),
		   "tenants.acme.ceilings.memory_bytes");
	expect_bad(T("{\"ceilings\": {\"colour\": 1}}}"),
		   "tenants.acme.ceilings.colour");
	expect_bad(T("{\"grant\": {\"network\": [\"SECRETVALUE\"]}}}"),
		   "tenants.acme.grant.network[0]");
	expect_bad(T("{\"grant\": {\"streaming\": 1}}}"),
		   "tenants.acme.grant.streaming");
	expect_bad(T("{\"languages\": \"python\"}}"), "tenants.acme.languages");
	expect_bad(T("{\"pins\": [{\"language\": \"sh\", "
		     "\"code_sha256\": \"SECRETVALUE\", \"grant\": {}}]}}"),
		   "tenants.acme.pins[0].code_sha256");
	expect_bad(T("{\"pins\": [{\"plan_sha256\": \"SECRETVALUE\", "
		     "\"grant\": {}}]}}"),
		   "tenants.acme.pins[0].plan_sha256");
	/* a code pin without its language: the same bytes could run as
	 * another language */
	expect_bad(T("{\"pins\": [{\"code_sha256\": \"" HEX64 "\", "
		     "\"grant\": {}}]}}"),
		   "tenants.acme.pins[0].language");
	expect_bad(T("{\"pins\": [{\"plan_sha256\": \"" HEX64 "\", "
		     "\"code_sha256\": \"" HEX64 "\", \"grant\": {}}]}}"),
		   "tenants.acme.pins[0]");
	expect_bad(T("{\"pins\": [{\"plan_sha256\": \"" HEX64 "\", "
		     "\"language\": \"sh\", \"grant\": {}}]}}"),
		   "tenants.acme.pins[0].language");
	expect_bad(T("{\"pins\": [{\"plan_sha256\": \"" HEX64 "\"}]}}"),
		   "tenants.acme.pins[0].grant");
	/* env_allow: names of the env policy only, never a reserved one */
	expect_bad(T("{\"env_allow\": [\"MY_SETTING\"]}}"),
		   "tenants.acme.env_allow[0]");
	expect_bad(T("{\"env_allow\": [\"LD_PRELOAD\"]}}"),
		   "tenants.acme.env_allow[0]");
	expect_bad(T("{\"ceilings\": {\"argv_bytes\": 0}}}"),
		   "tenants.acme.ceilings.argv_bytes");
	expect_bad("{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}, "
		   "\"acknowledged_providers\": [\"bad name\"]}",
		   "acknowledged_providers[0]");
	expect_bad(T("{\"concurrency\": 0}}"), "tenants.acme.concurrency");
	/* a secret that would override a trusted variable */
	expect_bad(T("{\"grant\": {\"secrets\": [\"PATH\"]}}}"),
		   "tenants.acme.grant.secrets[0]");
	expect_bad(T("{\"grant\": {\"secrets\": [\"A\", \"airlock_run_id\"]}}}"),
		   "tenants.acme.grant.secrets[1]");
	expect_bad(T("{\"pins\": [{\"plan_sha256\": \"" HEX64 "\", "
		     "\"grant\": {\"secrets\": [\"AIRLOCK_RUN_ID\"]}}]}}"),
		   "tenants.acme.pins[0].grant.secrets[0]");
	/* secret_env: the target is checked like the default */
	expect_bad(T("{\"secret_env\": {\"tok\": \"PATH\"}}}"),
		   "tenants.acme.secret_env.tok");
	expect_bad(T("{\"secret_env\": {\"tok\": \"NODE_OPTIONS\"}}}"),
		   "tenants.acme.secret_env.tok");
	expect_bad(T("{\"secret_env\": {\"a\": \"X\", \"b\": \"X\"}}}"),
		   "tenants.acme.secret_env.b");
	expect_bad(T("{\"secret_env\": {\"path\": \"MY_PATH\"}}}"),
		   "tenants.acme.secret_env.path");
	expect_bad(T("{\"grant\": {\"secrets\": [\"a-b\", \"a_b\"]}}}"),
		   "tenants.acme.grant.secrets[1]");
	/* pass_env: valid, not reserved, not the baseline's, no code loading
	 * unless env_allow names it */
	expect_bad(T("{\"pass_env\": [\"HTTPS_PROXY\", \"1X\"]}}"),
		   "tenants.acme.pass_env[1]");
	expect_bad(T("{\"pass_env\": [\"AIRLOCK_RUN_ID\"]}}"),
		   "tenants.acme.pass_env[0]");
	expect_bad(T("{\"pass_env\": [\"LC_ALL\"]}}"),
		   "tenants.acme.pass_env[0]");
	expect_bad(T("{\"pass_env\": [\"PYTHONPATH\"]}}"),
		   "tenants.acme.pass_env[0]");
	expect_bad(T("{\"pass_env\": [\"A\", \"A\"]}}"),
		   "tenants.acme.pass_env[1]");
	expect_bad(T("{\"grant\": {\"secrets\": [\"TOKEN\"]}}}"), "secrets");
	expect_bad("{\"providers\": [], \"tenants\": {\"a\": {}}}",
		   "providers");
	expect_bad("{\"providers\": [{\"provider\": \"x\", \"config\": 3}], "
		   "\"tenants\": {\"a\": {}}}",
		   "providers[0].config");
	expect_bad("{\"providers\": [\"x\", \"x\"], \"tenants\": {\"a\": {}}}",
		   "providers[1]");
	expect_bad("{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}, "
		   "\"execution_enabled\": \"yes\"}",
		   "execution_enabled");
	expect_bad("{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}, "
		   "\"state_dir\": \"relative\"}",
		   "state_dir");
	expect_bad("{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}, "
		   "\"audit\": {\"finished_synchronous\": \"off\"}}",
		   "audit.finished_synchronous");
	expect_bad("{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}, "
		   "\"secrets\": {\"dir\": \"/a\", \"file\": \"/b\"}}",
		   "secrets");
	expect_bad("{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}} trailing",
		   "syntax");
	expect_bad("{\"providers\": [\"x\"], \"providers\": [\"y\"], "
		   "\"tenants\": {\"a\": {}}}",
		   "syntax");
	expect_bad("[1]", "$");
}

/* "retention": seconds a finished run's artifacts are kept; 7 days when
 * absent; a positive integer within ten years. */
static void test_env_directives(void **state)
{
	(void)state;
	static const char json[] =
		"{\"providers\": [\"sandbox\"], \"secrets\": {\"dir\": \"/s\"},"
		" \"tenants\": {\"t\": {\"env_allow\": [\"PYTHONPATH\"],"
		" \"pass_env\": [\"HTTPS_PROXY\", \"PYTHONPATH\"],"
		" \"secret_env\": {\"gh.token\": \"GH_TOKEN\"},"
		" \"grant\": {\"secrets\": [\"gh.token\", \"db-url\"]}}}}";
	al_config *cfg = NULL;
	al_error *err = NULL;
	char buf[129];
	assert_int_equal(al_config_parse(json, strlen(json), &cfg, &err), 0);
	const al_cfg_tenant *t = al_config_tenant(cfg, "t");
	assert_int_equal(t->n_pass_env, 2);
	assert_string_equal(t->pass_env[0], "HTTPS_PROXY");
	assert_string_equal(al_cfg_secret_var(t, "gh.token", buf), "GH_TOKEN");
	assert_string_equal(al_cfg_secret_var(t, "db-url", buf), "DB_URL");
	assert_string_equal(al_cfg_secret_var(NULL, "gh.token", buf),
			    "GH_TOKEN");
	al_config_free(cfg);
}

static void test_retention(void **state)
{
	(void)state;
	al_config *cfg = NULL;
	assert_int_equal(al_config_default(&cfg, NULL), 0);
	assert_int_equal(cfg->retention_s, 7u * 24u * 3600u);
	al_config_free(cfg);
	const char *ok = "{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}, "
			 "\"retention\": 3600}";
	assert_int_equal(al_config_parse(ok, strlen(ok), &cfg, NULL), 0);
	assert_int_equal(cfg->retention_s, 3600);
	/* a copy keeps it */
	al_config *copy = NULL;
	assert_int_equal(al_config_copy(cfg, &copy, NULL), 0);
	assert_int_equal(copy->retention_s, 3600);
	al_config_free(copy);
	al_config_free(cfg);
	expect_bad("{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}, "
		   "\"retention\": 0}",
		   "retention");
	expect_bad("{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}, "
		   "\"retention\": \"7d\"}",
		   "retention");
	expect_bad("{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}, "
		   "\"retention\": 999999999999}",
		   "retention");
}

/* "spare_run_dirs": run directories airlockd makes ahead, 4 unless set,
 * 0…64. */
static void test_spare_run_dirs(void **state)
{
	(void)state;
	al_config *cfg = NULL;
	assert_int_equal(al_config_default(&cfg, NULL), 0);
	assert_int_equal(cfg->spare_run_dirs, 4);
	al_config_free(cfg);
	const char *none = "{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}, "
			   "\"spare_run_dirs\": 0}";
	assert_int_equal(al_config_parse(none, strlen(none), &cfg, NULL), 0);
	assert_int_equal(cfg->spare_run_dirs, 0);
	al_config_free(cfg);
	const char *most = "{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}, "
			   "\"spare_run_dirs\": 64}";
	assert_int_equal(al_config_parse(most, strlen(most), &cfg, NULL), 0);
	assert_int_equal(cfg->spare_run_dirs, 64);
	al_config_free(cfg);
	expect_bad("{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}, "
		   "\"spare_run_dirs\": 65}",
		   "spare_run_dirs");
	expect_bad("{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}, "
		   "\"spare_run_dirs\": -1}",
		   "spare_run_dirs");
	expect_bad("{\"providers\": [\"x\"], \"tenants\": {\"a\": {}}, "
		   "\"spare_run_dirs\": \"4\"}",
		   "spare_run_dirs");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example_loads),
		cmocka_unit_test(test_default),
		cmocka_unit_test(test_audit_sync),
		cmocka_unit_test(test_default_ceilings),
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_retention),
		cmocka_unit_test(test_spare_run_dirs),
		cmocka_unit_test(test_env_directives),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
