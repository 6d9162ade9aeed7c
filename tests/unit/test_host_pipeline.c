/* The host pipeline against a counting test provider and a real SQLite
 * state directory: every refusal happens before the provider's execute is
 * called; selection records each skipped candidate; slots hold their quota
 * under 50 concurrent runs; idempotent duplicates run once; the audit chain
 * detects edits, deletions and swaps; the host deadline holds against a
 * provider that ignores cancel; secrets never reach results or the audit
 * trail. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <sqlite3.h>

#include <airlock/airlock.h>

#include "host/plan.h"

/* ---- the counting test provider ---------------------------------------
 * Facts come from the candidate's config JSON:
 *   {"available": bool, "class": "sandboxed"|"trusted_local"|"disabled",
 *    "languages": [[language, toolchain, version]], "limits": bits,
 *    "network": bits, "workspace": bits, "streaming": bool}
 * Behaviour comes from the request's code: "echo:TEXT", "sleep:MS",
 * "ignore:MS" (sleeps, ignoring cancel), "wait" (until cancel/interrupt),
 * "big:N" (N bytes of stdout, not truncated by the provider), "badshape",
 * "env" (prints host_env). */

static atomic_int n_execute;
static atomic_int n_live;
static atomic_int max_live;
static atomic_int n_ensure;
static atomic_int n_probe;
static atomic_int n_release;
static atomic_int fail_release;
static void *quarantined;

static void reset_counters(void)
{
	n_execute = n_live = max_live = n_ensure = n_release = n_probe = 0;
	fail_release = 0;
}

static int tp_probe(const char *config_json, al_facts **out, al_error **err)
{
	(void)err;
	n_probe++;
	json_t *c = config_json ? json_loads(config_json, 0, NULL) : NULL;
	json_t *v;
	al_safety_class cls = AL_SAFETY_SANDBOXED;
	if (c && (v = json_object_get(c, "class")))
		al_safety_class_from_name(json_string_value(v), &cls);
	al_facts *f = al_facts_new("tp", cls);
	f->available = !(c && (v = json_object_get(c, "available")) &&
			 json_is_false(v));
	if (!f->available)
		f->unavailable_reason = strdup("test_says_no");
	f->limits = AL_LIMIT__ALL;
	f->network = (1u << AL_NETWORK_NONE) | (1u << AL_NETWORK_LOOPBACK);
	f->workspace = 7;
	f->streaming = true;
	if (c && (v = json_object_get(c, "limits")))
		f->limits = (unsigned)json_integer_value(v);
	if (c && (v = json_object_get(c, "network")))
		f->network = (unsigned)json_integer_value(v);
	if (c && (v = json_object_get(c, "workspace")))
		f->workspace = (unsigned)json_integer_value(v);
	if (c && (v = json_object_get(c, "streaming")))
		f->streaming = json_is_true(v);
	json_t *langs = c ? json_object_get(c, "languages") : NULL;
	if (langs) {
		for (size_t i = 0; i < json_array_size(langs); i++) {
			json_t *l = json_array_get(langs, i);
			al_facts_add_language(
				f, json_string_value(json_array_get(l, 0)),
				json_string_value(json_array_get(l, 1)),
				json_string_value(json_array_get(l, 2)),
				"/usr/bin/true");
		}
	} else {
		al_facts_add_language(f, "python", "python", "3.11.2",
				      "/usr/bin/python3");
		al_facts_add_language(f, "sh", "sh", "5.2", "/bin/sh");
	}
	json_decref(c);
	*out = f;
	return 0;
}

static int tp_ensure(const char *config_json, al_provider_handle **h,
		     al_error **err)
{
	(void)config_json;
	(void)err;
	n_ensure++;
	*h = (al_provider_handle *)calloc(1, 16);
	return 0;
}

static int tp_release(al_provider_handle *h, al_error **err)
{
	(void)err;
	n_release++;
	if (fail_release) {
		/* The host quarantines it; the test frees it afterwards. */
		quarantined = h;
		return -EIO;
	}
	free(h);
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void set_out(al_result *res, const char *text)
{
	free(res->output[AL_STDOUT].data);
	res->output[AL_STDOUT].data = (unsigned char *)strdup(text);
	res->output[AL_STDOUT].len = strlen(text);
	res->output_seen[AL_STDOUT] = strlen(text);
}

static int tp_execute(al_provider_handle *h, const al_exec *ex,
		      al_result *res, al_error **err)
{
	(void)h;
	(void)err;
	n_execute++;
	int live = ++n_live;
	int m = max_live;
	while (live > m && !atomic_compare_exchange_weak(&max_live, &m, live))
		;
	const char *code = (const char *)ex->request->code.data;
	al_outcome oc = AL_OUTCOME_COMPLETED;
	if (strncmp(code, "echo:", 5) == 0) {
		set_out(res, code + 5);
	} else if (strncmp(code, "sleep:", 6) == 0) {
		sleep_ms(atol(code + 6));
	} else if (strncmp(code, "ignore:", 7) == 0) {
		sleep_ms(atol(code + 7));
	} else if (strcmp(code, "wait") == 0) {
		struct pollfd pf = {.fd = al_cancel_fd(ex->cancel),
				    .events = POLLIN};
		poll(&pf, 1, 10000);
		oc = al_cancel_state(ex->cancel) == AL_CANCEL_INTERRUPTED
			     ? AL_OUTCOME_INTERRUPTED
			     : AL_OUTCOME_CANCELLED;
	} else if (strncmp(code, "big:", 4) == 0) {
		size_t n = (size_t)atol(code + 4);
		char *b = malloc(n + 1);
		memset(b, 'x', n);
		b[n] = '\0';
		set_out(res, b);
		free(b);
	} else if (strncmp(code, "stream:", 7) == 0) {
		if (ex->on_output)
			ex->on_output(ex->on_output_ctx, AL_STDOUT,
				      (const unsigned char *)code + 7,
				      strlen(code + 7));
		set_out(res, code + 7);
	} else if (strcmp(code, "limits") == 0) {
		char buf[128];
		const al_limits *l = &ex->request->limits;
		snprintf(buf, sizeof(buf), "memory=%llu set=%u cpu=%llu",
			 (unsigned long long)l->memory_bytes, l->set,
			 (unsigned long long)l->cpu_ms);
		set_out(res, buf);
	} else if (strcmp(code, "env") == 0) {
		char buf[512] = "";
		for (size_t i = 0; i < ex->n_host_env; i++)
			if (strncmp(ex->host_env[i], "TEST_TOKEN=", 11) == 0)
				snprintf(buf, sizeof(buf), "got %zu bytes",
					 strlen(ex->host_env[i] + 11));
		set_out(res, buf);
		/* The value reached the provider, and only here. */
		bool found = false;
		for (size_t i = 0; i < ex->n_host_env; i++)
			found = found || strcmp(ex->host_env[i],
						"TEST_TOKEN=hunter2-s3cr3t") ==
						 0;
		oc = found ? AL_OUTCOME_COMPLETED : AL_OUTCOME_FAILED;
	}
	if (strcmp(code, "badshape") == 0) {
		/* timed out with an exit code: a shape the host rejects */
		al_result_set_outcome(res, AL_OUTCOME_TIMED_OUT, NULL);
		res->has_exit_code = true;
	} else {
		al_result_set_outcome(res, oc, NULL);
		if (oc == AL_OUTCOME_COMPLETED || oc == AL_OUTCOME_FAILED) {
			res->has_exit_code = true;
			res->exit_code = oc == AL_OUTCOME_COMPLETED ? 0 : 1;
		}
		if (oc == AL_OUTCOME_INTERRUPTED) {
			res->has_signal = true;
			res->signal = 15;
		}
	}
	n_live--;
	return 0;
}

static int tp_health(al_provider_handle *h, al_error **err)
{
	(void)h;
	(void)err;
	return 0;
}

#define TP_OPS(name)                                                       \
	{.id = (name), .probe = tp_probe, .ensure = tp_ensure,               \
	 .health = tp_health, .execute = tp_execute, .interrupt = NULL,    \
	 .release = tp_release}

static const al_provider_ops tp = TP_OPS("tp");
static const al_provider_ops tp2 = TP_OPS("tp2");
static const al_provider_ops tp3 = TP_OPS("tp3");
static const al_provider_ops tp4 = TP_OPS("tp4");
static const al_provider_ops *const test_providers[] = {&tp, &tp2, &tp3,
							&tp4, NULL};

/* ---- fixture ---------------------------------------------------------- */

typedef struct fx {
	char dir[64];
	char state[128];
	al_host *host;
} fx;

static int fx_setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/al-host-test-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->state, sizeof(f->state), "%s/state", f->dir);
	reset_counters();
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	fx *f = *state;
	al_host_free(f->host);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* The test providers are third-party ones: the fixture acknowledges them
 * (docs/host.md, step 6) unless the test's configuration says otherwise. */
static void fx_host(fx *f, const char *config)
{
	al_config *cfg = NULL;
	al_error *err = NULL;
	char *text = NULL;
	if (strstr(config, "acknowledged_providers") == NULL) {
		assert_true(config[0] == '{');
		assert_true(asprintf(&text,
				     "{\"acknowledged_providers\": [\"tp\", "
				     "\"tp2\", \"tp3\", \"tp4\"], %s",
				     config + 1) > 0);
		config = text;
	}
	if (al_config_parse(config, strlen(config), &cfg, &err) < 0)
		fail_msg("config: %s", al_error_get_message(err));
	free(text);
	al_host_options o = {.state_dir = f->state,
			     .providers = test_providers};
	if (al_host_new(cfg, &o, &f->host, &err) < 0)
		fail_msg("host: %s", al_error_get_message(err));
	al_config_free(cfg);
}

static const char base_cfg[] =
	"{\"providers\": [\"tp\"], \"grace_ms\": 200,"
	" \"tenants\": {\"acme\": {\"languages\": [\"python\"],"
	"  \"grant\": {\"network\": [\"none\"], \"workspace\": [\"none\", "
	"\"ro\"]},"
	"  \"pins\": [{\"language\": \"python\", \"code_sha256\": "
	"\"ccf1a5fa5ec4e2e3c6f4bfca3d5a1d7a4a77d7ec0a8b52b1b06d0fc0f3ac2f5f\","
	"   \"grant\": {\"network\": [\"loopback\"]}}],"
	"  \"ceilings\": {\"memory_bytes\": 1000000, \"wall_ms\": 5000}},"
	" \"other\": {\"languages\": \"*\"}}}";

static al_host_context acme = {.tenant = "acme", .principal = "tester"};

static al_result *run_json(fx *f, const al_host_context *ctx,
			   const char *json)
{
	al_result *res = NULL;
	assert_int_equal(
		al_host_run_json(f->host, ctx, json, strlen(json), NULL, &res),
		0);
	assert_non_null(res);
	return res;
}

static void expect(al_result *res, al_outcome oc, const char *reason)
{
	if (res->outcome != oc ||
	    (reason && (!res->reason || strcmp(res->reason, reason) != 0)))
		fail_msg("got %s/%s, want %s/%s", al_outcome_name(res->outcome),
			 res->reason ? res->reason : "-", al_outcome_name(oc),
			 reason ? reason : "-");
	al_result_free(res);
}

static char *audit_text(fx *f)
{
	char *lines = NULL;
	assert_int_equal(al_audit_tail(f->state, 1000, &lines, NULL), 0);
	return lines;
}

/* ---- gates ------------------------------------------------------------ */

static void test_refusals_never_execute(void **state)
{
	fx *f = *state;
	fx_host(f, base_cfg);
	/* invalid request: field path, value not echoed */
	al_result *r = run_json(f, &acme,
				"{\"language\": \"python\", \"code\": \"x\", "
				"\"limits\": {\"wall_ms\": \"SECRETVALUE\"}}");
	assert_string_equal(r->reason, "limits.wall_ms");
	expect(r, AL_OUTCOME_INVALID_REQUEST, NULL);
	/* unknown tenant */
	al_host_context nobody = {.tenant = "nobody"};
	expect(run_json(f, &nobody,
			"{\"language\": \"python\", \"code\": \"echo:x\"}"),
	       AL_OUTCOME_DENIED, "gate:tenant");
	/* language allow-list */
	expect(run_json(f, &acme, "{\"language\": \"sh\", \"code\": \"x\"}"),
	       AL_OUTCOME_DENIED, "gate:language");
	/* grant: network, workspace, secrets, streaming */
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"x\", "
			"\"grant\": {\"network\": \"loopback\"}}"),
	       AL_OUTCOME_DENIED, "gate:grant");
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"x\", "
			"\"grant\": {\"workspace\": \"rw\"}}"),
	       AL_OUTCOME_DENIED, "gate:grant");
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"x\", "
			"\"grant\": {\"secrets\": [\"TOKEN\"]}}"),
	       AL_OUTCOME_DENIED, "gate:grant");
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"x\", "
			"\"grant\": {\"streaming\": true}}"),
	       AL_OUTCOME_DENIED, "gate:grant");
	/* ceilings: an explicit limit over the ceiling */
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"x\", "
			"\"limits\": {\"memory_bytes\": 2000000}}"),
	       AL_OUTCOME_DENIED, "gate:ceiling:memory_bytes");
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"x\", "
			"\"limits\": {\"wall_ms\": 6000}}"),
	       AL_OUTCOME_DENIED, "gate:ceiling:wall_ms");
	assert_int_equal(n_execute, 0);
	assert_int_equal(n_ensure, 0);

	/* every refusal was audited as run.denied and the chain holds */
	size_t records = 0;
	assert_int_equal(al_audit_verify(f->state, &records, NULL), 0);
	assert_int_equal(records, 9);
	char *lines = audit_text(f);
	assert_non_null(strstr(lines, "\"event\":\"run.denied\""));
	assert_null(strstr(lines, "SECRETVALUE"));
	assert_null(strstr(lines, "run.started"));
	free(lines);

	/* a request within everything runs; defaulted limits took the
	 * ceiling (memory 0 = unlimited would escape it) */
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"echo:hi\"}"),
	       AL_OUTCOME_COMPLETED, NULL);
	assert_int_equal(n_execute, 1);
	lines = audit_text(f);
	assert_non_null(strstr(lines, "\"memory_bytes\":1000000"));
	free(lines);
}

static void test_disabled(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"execution_enabled\": false, \"providers\": [\"tp\"],"
		   " \"tenants\": {\"acme\": {\"languages\": \"*\"}}}");
	expect(run_json(f, &acme, "{\"language\": \"python\", \"code\": \"x\"}"),
	       AL_OUTCOME_DISABLED, "execution_disabled");
	assert_int_equal(n_execute, 0);
}

static void test_pin_widens_grant_for_that_content(void **state)
{
	fx *f = *state;
	char hex[65];
	al_sha256_hex("echo:pinned", 11, hex);
	char cfg[1024];
	snprintf(cfg, sizeof(cfg),
		 "{\"providers\": [\"tp\"], \"tenants\": {\"acme\": "
		 "{\"languages\": \"*\", \"pins\": [{\"language\": "
		 "\"python\", \"code_sha256\": \"%s\", "
		 "\"grant\": {\"network\": [\"loopback\"]}}]}}}",
		 hex);
	fx_host(f, cfg);
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"echo:pinned\", "
			"\"grant\": {\"network\": \"loopback\"}}"),
	       AL_OUTCOME_COMPLETED, NULL);
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"echo:other\", "
			"\"grant\": {\"network\": \"loopback\"}}"),
	       AL_OUTCOME_DENIED, "gate:grant");
	assert_int_equal(n_execute, 1);
}

static char *selection_of_last(fx *f)
{
	char *lines = audit_text(f);
	char *last = lines;
	for (char *p = lines; *p; p++)
		if (p[0] == '\n' && p[1])
			last = p + 1;
	char *copy = strdup(last);
	free(lines);
	return copy;
}

/* The plan hash of a request given as JSON, as the host computes it. */
static void plan_of(const char *json, char hex[65])
{
	al_request *r = NULL;
	assert_int_equal(al_request_from_json(json, strlen(json), &r, NULL), 0);
	assert_int_equal(al_plan_sha256(r, hex), 0);
	al_request_free(r);
}

#define PLAN_REQ "{\"language\": \"python\", \"code\": \"echo:pinned\", " \
		 "\"argv\": [\"a\"], \"env\": {\"MODE\": \"x\"}, "        \
		 "\"stdin\": \"in\", \"files\": [{\"path\": \"f\", "         \
		 "\"content\": \"c\"}], \"grant\": {\"network\": "           \
		 "\"loopback\", \"workspace\": \"ro\"}"

/* A plan pin widens the grant only for exactly that plan: changing any of
 * code, language, argv, env, stdin or a file's content, path or mode is
 * another plan.  Grant and limits are not part of it. */
static void test_plan_pin_covers_the_whole_plan(void **state)
{
	fx *f = *state;
	char hex[65], cfg[1024];
	plan_of(PLAN_REQ "}", hex);
	snprintf(cfg, sizeof(cfg),
		 "{\"providers\": [\"tp\"], \"tenants\": {\"acme\": "
		 "{\"languages\": \"*\", \"pins\": [{\"plan_sha256\": \"%s\", "
		 "\"grant\": {\"network\": [\"loopback\"], \"workspace\": "
		 "[\"ro\"]}}]}}}",
		 hex);
	fx_host(f, cfg);
	expect(run_json(f, &acme, PLAN_REQ "}"), AL_OUTCOME_COMPLETED, NULL);
	/* limits are not the plan */
	expect(run_json(f, &acme, PLAN_REQ ", \"limits\": {\"wall_ms\": 900}}"),
	       AL_OUTCOME_COMPLETED, NULL);
	static const char *const other[] = {
		"{\"language\": \"sh\", \"code\": \"echo:pinned\", "
		"\"argv\": [\"a\"], \"env\": {\"MODE\": \"x\"}, \"stdin\": \"in\", "
		"\"files\": [{\"path\": \"f\", \"content\": \"c\"}], "
		"\"grant\": {\"network\": \"loopback\", \"workspace\": \"ro\"}}",
		"{\"language\": \"python\", \"code\": \"echo:pinned\", "
		"\"argv\": [\"a\", \"b\"], \"env\": {\"MODE\": \"x\"}, "
		"\"stdin\": \"in\", \"files\": [{\"path\": \"f\", \"content\": "
		"\"c\"}], \"grant\": {\"network\": \"loopback\", \"workspace\": "
		"\"ro\"}}",
		"{\"language\": \"python\", \"code\": \"echo:pinned\", "
		"\"argv\": [\"a\"], \"env\": {\"MODE\": \"x\", \"MORE\": \"y\"}, "
		"\"stdin\": \"in\", \"files\": [{\"path\": \"f\", \"content\": "
		"\"c\"}], \"grant\": {\"network\": \"loopback\", \"workspace\": "
		"\"ro\"}}",
		"{\"language\": \"python\", \"code\": \"echo:pinned\", "
		"\"argv\": [\"a\"], \"env\": {\"MODE\": \"x\"}, \"stdin\": "
		"\"import os\", \"files\": [{\"path\": \"f\", \"content\": \"c\"}], "
		"\"grant\": {\"network\": \"loopback\", \"workspace\": \"ro\"}}",
		"{\"language\": \"python\", \"code\": \"echo:pinned\", "
		"\"argv\": [\"a\"], \"env\": {\"MODE\": \"x\"}, \"stdin\": \"in\", "
		"\"files\": [{\"path\": \"f\", \"content\": \"c\", \"mode\": "
		"\"0755\"}], \"grant\": {\"network\": \"loopback\", \"workspace\": "
		"\"ro\"}}",
		"{\"language\": \"python\", \"code\": \"echo:pinned\", "
		"\"argv\": [\"a\"], \"env\": {\"MODE\": \"x\"}, \"stdin\": \"in\", "
		"\"files\": [{\"path\": \"f\", \"content\": \"d\"}], "
		"\"grant\": {\"network\": \"loopback\", \"workspace\": \"ro\"}}",
		"{\"language\": \"python\", \"code\": \"echo:pinned\", "
		"\"argv\": [\"a\"], \"env\": {\"MODE\": \"x\"}, \"stdin\": \"in\", "
		"\"files\": [{\"path\": \"f\", \"content\": \"c\"}], "
		"\"toolchain\": {\"python\": \">=3\"}, "
		"\"grant\": {\"network\": \"loopback\", \"workspace\": \"ro\"}}",
	};
	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		expect(run_json(f, &acme, other[i]), AL_OUTCOME_DENIED,
		       "gate:grant");
	assert_int_equal(n_execute, 2);
	/* the audit record names the plan, so an operator can pin it */
	char *lines = audit_text(f);
	assert_non_null(strstr(lines, hex));
	free(lines);
}

/* A code pin is the plan of the code alone in its language: adding argv,
 * env, stdin or files, or another language, leaves it. */
static void test_code_pin_refuses_anything_added(void **state)
{
	fx *f = *state;
	char hex[65], cfg[1024];
	al_sha256_hex("echo:pinned", 11, hex);
	snprintf(cfg, sizeof(cfg),
		 "{\"providers\": [\"tp\"], \"tenants\": {\"acme\": "
		 "{\"languages\": \"*\", \"pins\": [{\"language\": \"python\", "
		 "\"code_sha256\": \"%s\", \"grant\": {\"network\": "
		 "[\"loopback\"], \"workspace\": [\"ro\"]}}]}}}",
		 hex);
	fx_host(f, cfg);
#define CP(extra)                                                           \
	"{\"language\": \"python\", \"code\": \"echo:pinned\", \"grant\": "   \
	"{\"network\": \"loopback\", \"workspace\": \"ro\"}" extra "}"
	expect(run_json(f, &acme, CP("")), AL_OUTCOME_COMPLETED, NULL);
	expect(run_json(f, &acme, CP(", \"argv\": [\"x\"]")), AL_OUTCOME_DENIED,
	       "gate:grant");
	expect(run_json(f, &acme, CP(", \"env\": {\"MODE\": \"x\"}")),
	       AL_OUTCOME_DENIED, "gate:grant");
	expect(run_json(f, &acme, CP(", \"stdin\": \"\"")), AL_OUTCOME_DENIED,
	       "gate:grant");
	expect(run_json(f, &acme,
			CP(", \"files\": [{\"path\": \"f\", \"content\": \"\"}]")),
	       AL_OUTCOME_DENIED, "gate:grant");
	expect(run_json(f, &acme,
			"{\"language\": \"sh\", \"code\": \"echo:pinned\", "
			"\"grant\": {\"network\": \"loopback\"}}"),
	       AL_OUTCOME_DENIED, "gate:grant");
#undef CP
	assert_int_equal(n_execute, 1);
}

/* Variables that load code are refused unless the tenant allows them; the
 * refusal names the table's pattern, never the request's value. */
static void test_env_policy(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [\"tp\"], \"tenants\": {\"acme\": "
		   "{\"languages\": \"*\", \"env_allow\": [\"PYTHONPATH\"]}}}");
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"echo:x\", "
			"\"env\": {\"NODE_OPTIONS\": \"SECRETVALUE\"}}"),
	       AL_OUTCOME_DENIED, "gate:env:NODE_OPTIONS");
	expect(run_json(f, &acme,
			"{\"language\": \"sh\", \"code\": \"echo:x\", "
			"\"env\": {\"A\": \"1\", \"BASH_ENV\": \"SECRETVALUE\"}}"),
	       AL_OUTCOME_DENIED, "gate:env:BASH_ENV");
	expect(run_json(f, &acme,
			"{\"language\": \"sh\", \"code\": \"echo:x\", "
			"\"env\": {\"DOTNET_STARTUP_HOOKS\": \"SECRETVALUE\"}}"),
	       AL_OUTCOME_DENIED, "gate:env:DOTNET_*");
	assert_int_equal(n_execute, 0);
	/* named by the tenant: allowed */
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"echo:x\", "
			"\"env\": {\"PYTHONPATH\": \"/workspace\", \"MODE\": \"1\"}}"),
	       AL_OUTCOME_COMPLETED, NULL);
	assert_int_equal(n_execute, 1);
	char *lines = audit_text(f);
	assert_null(strstr(lines, "SECRETVALUE"));
	free(lines);
}

/* Built-in ceilings: an explicit limit above one is refused, naming it; an
 * unset one is bounded.  A provider that does not enforce a limit whose
 * value comes from a built-in ceiling still runs the request, without it;
 * a ceiling the configuration names must be enforced. */
static void test_default_ceilings(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [{\"provider\": \"tp\", \"config\": "
		   "{\"limits\": 251}}], "
		   "\"tenants\": {\"acme\": {\"languages\": \"*\"}, "
		   "\"strict\": {\"languages\": \"*\", \"ceilings\": "
		   "{\"memory_bytes\": 4294967296}}}}");
	/* 251: every limit but memory_bytes (4) */
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"x\", "
			"\"limits\": {\"memory_bytes\": 4294967296}}"),
	       AL_OUTCOME_DENIED, "gate:ceiling:memory_bytes");
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"x\", "
			"\"limits\": {\"pids\": 100000}}"),
	       AL_OUTCOME_DENIED, "gate:ceiling:pids");
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"x\", "
			"\"limits\": {\"wall_ms\": 86400000}}"),
	       AL_OUTCOME_DENIED, "gate:ceiling:wall_ms");
	static char big[400000];
	int n = snprintf(big, sizeof(big),
			 "{\"language\": \"python\", \"code\": \"x\", "
			 "\"argv\": [");
	for (int i = 0; i < 5; i++)
		n += snprintf(big + n, sizeof(big) - (size_t)n, "%s\"%060000d\"",
			      i ? ", " : "", 0);
	snprintf(big + n, sizeof(big) - (size_t)n, "]}");
	expect(run_json(f, &acme, big), AL_OUTCOME_DENIED,
	       "gate:ceiling:argv_bytes");
	assert_int_equal(n_execute, 0);
	/* unset: cpu bounded by the ceiling and explicit for the provider;
	 * memory dropped for a provider that cannot enforce it */
	al_result *r = run_json(f, &acme,
				"{\"language\": \"python\", \"code\": "
				"\"limits\"}");
	assert_int_equal(r->outcome, AL_OUTCOME_COMPLETED);
	char want[128];
	snprintf(want, sizeof(want), "memory=0 set=%u cpu=%u",
		 (unsigned)(AL_LIMIT_CPU_MS | AL_LIMIT_PIDS |
			    AL_LIMIT_FILE_BYTES),
		 900000u);
	assert_string_equal((char *)r->output[AL_STDOUT].data, want);
	al_result_free(r);
	/* a configured ceiling binds: the provider cannot, so it is not
	 * chosen */
	al_host_context strict = {.tenant = "strict"};
	expect(run_json(f, &strict,
			"{\"language\": \"python\", \"code\": \"limits\"}"),
	       AL_OUTCOME_UNENFORCEABLE_LIMIT, "memory_bytes");
	assert_int_equal(n_execute, 1);
}

/* A provider airlock did not build runs nothing, and is not even probed,
 * until the deployment acknowledges it. */
static void test_provider_needs_acknowledgement(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"acknowledged_providers\": [\"tp2\"], "
		   "\"providers\": [\"tp\", {\"provider\": \"tp2\", "
		   "\"config\": {\"available\": false}}], "
		   "\"tenants\": {\"acme\": {\"languages\": \"*\"}}}");
	expect(run_json(f, &acme, "{\"language\": \"python\", \"code\": "
				  "\"echo:x\"}"),
	       AL_OUTCOME_UNAVAILABLE, "sandbox_unavailable");
	char *rec = selection_of_last(f);
	assert_non_null(strstr(rec, "{\"provider\":\"tp\",\"skipped\":"
				    "\"not_acknowledged\"}"));
	assert_non_null(strstr(rec, "\"provider\":\"tp2\",\"skipped\":"
				    "\"unavailable\""));
	free(rec);
	assert_int_equal(n_execute, 0);
	assert_int_equal(n_probe, 1); /* tp2 only */
	/* capabilities do not probe it either */
	al_facts **caps = NULL;
	size_t nc = 0;
	assert_int_equal(al_host_capabilities(f->host, &acme, &caps, &nc, NULL),
			 0);
	assert_int_equal(nc, 2);
	assert_false(caps[0]->available);
	assert_string_equal(caps[0]->unavailable_reason, "not_acknowledged");
	al_facts_array_free(caps, nc);
	assert_int_equal(n_probe, 2);
}

/* ---- selection --------------------------------------------------------- */

static void test_selection_skips(void **state)
{
	fx *f = *state;
	fx_host(f,
		"{\"providers\": ["
		" {\"provider\": \"tp\", \"config\": {\"available\": false}},"
		" {\"provider\": \"tp2\", \"config\": {\"class\": "
		"\"trusted_local\"}},"
		" {\"provider\": \"tp3\", \"config\": {\"languages\": "
		"[[\"python\", \"python\", \"3.9.1\"]]}},"
		" {\"provider\": \"tp4\", \"config\": {\"limits\": 1}}],"
		" \"tenants\": {\"acme\": {\"languages\": \"*\"}}}");
	/* python with >=3.10 and a memory limit: tp unavailable, tp2 not
	 * acknowledged, tp3 too old, tp4 cannot limit memory */
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"x\", "
			"\"toolchain\": {\"python\": \">=3.10\"}, "
			"\"limits\": {\"memory_bytes\": 1000}}"),
	       AL_OUTCOME_UNENFORCEABLE_LIMIT, "memory_bytes");
	char *rec = selection_of_last(f);
	assert_non_null(strstr(rec, "{\"detail\":\"test_says_no\","
				    "\"provider\":\"tp\",\"skipped\":"
				    "\"unavailable\"}"));
	assert_non_null(strstr(rec, "\"provider\":\"tp2\",\"skipped\":"
				    "\"trusted_not_acknowledged\""));
	assert_non_null(strstr(rec, "\"detail\":\"python\",\"provider\":"
				    "\"tp3\",\"skipped\":"
				    "\"version_ineligible\""));
	assert_non_null(strstr(rec, "\"detail\":\"memory_bytes\","
				    "\"provider\":\"tp4\",\"skipped\":"
				    "\"capability_ineligible\""));
	free(rec);
	/* without the memory limit tp4's open_files default still needs
	 * enforcing: every non-zero limit must be enforceable */
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"x\", "
			"\"toolchain\": {\"python\": \">=3.10\"}}"),
	       AL_OUTCOME_UNENFORCEABLE_LIMIT, "output_bytes");
	/* a language nobody offers */
	expect(run_json(f, &acme, "{\"language\": \"ruby\", \"code\": \"x\"}"),
	       AL_OUTCOME_UNSUPPORTED_LANGUAGE, "language_absent");
	rec = selection_of_last(f);
	assert_non_null(strstr(rec, "\"skipped\":\"language_absent\""));
	free(rec);
	assert_int_equal(n_execute, 0);
}

static void test_isolation_required_never_trusted(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"trusted_provider_acknowledged\": true, \"providers\": "
		   "[{\"provider\": \"tp\", \"config\": {\"class\": "
		   "\"trusted_local\"}}],"
		   " \"tenants\": {\"acme\": {\"languages\": \"*\"}}}");
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"x\", "
			"\"isolation\": \"required\"}"),
	       AL_OUTCOME_UNAVAILABLE, "sandbox_unavailable");
	char *rec = selection_of_last(f);
	assert_non_null(strstr(rec, "\"skipped\":\"isolation_required\""));
	free(rec);
	assert_int_equal(n_execute, 0);
	/* acknowledged and isolation preferred: it runs, with its facts */
	al_result *r = run_json(f, &acme,
				"{\"language\": \"python\", \"code\": "
				"\"echo:ok\"}");
	assert_non_null(r->provider);
	assert_string_equal(r->provider->provider, "tp");
	assert_int_equal(r->provider->safety_class, AL_SAFETY_TRUSTED_LOCAL);
	expect(r, AL_OUTCOME_COMPLETED, NULL);
	assert_int_equal(n_execute, 1);
}

static void test_disabled_provider_and_unavailable(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [{\"provider\": \"tp\", \"config\": "
		   "{\"available\": false}}, {\"provider\": \"tp2\", "
		   "\"config\": {\"class\": \"disabled\"}}],"
		   " \"tenants\": {\"acme\": {\"languages\": \"*\"}}}");
	expect(run_json(f, &acme, "{\"language\": \"python\", \"code\": \"x\"}"),
	       AL_OUTCOME_DISABLED, "provider_disabled");
	assert_int_equal(n_execute, 0);
	assert_int_equal(n_ensure, 0);
}

static void test_handles_cached_and_quarantined(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [\"tp\"], \"tenants\": {\"acme\": "
		   "{\"languages\": \"*\"}}}");
	for (int i = 0; i < 3; i++)
		expect(run_json(f, &acme,
				"{\"language\": \"python\", \"code\": "
				"\"echo:x\"}"),
		       AL_OUTCOME_COMPLETED, NULL);
	assert_int_equal(n_ensure, 1);
	/* one probe per selection; the first, made under the ensure lock
	 * with no handle yet, is the new handle's own; later runs reuse
	 * the handle */
	assert_int_equal(n_probe, 3);
	fail_release = 1;
	char *m = al_host_metrics_text(f->host);
	assert_non_null(strstr(m, "airlock_quarantined_handles 0\n"));
	assert_non_null(strstr(m, "airlock_runs_total{outcome=\"completed\","
				  "provider=\"tp\",language=\"python\"} 3\n"));
	free(m);
	al_host_free(f->host);
	f->host = NULL;
	assert_int_equal(n_release, 1);
	assert_non_null(quarantined);
	free(quarantined);
	quarantined = NULL;
}

/* ---- audit refusal ----------------------------------------------------- */

static void test_audit_failure_refuses(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [\"tp\"], \"audit\": {\"busy_timeout_ms\":"
		   " 100}, \"tenants\": {\"acme\": {\"languages\": \"*\"}}}");
	/* Another process holds the database's write lock: the started
	 * record cannot be written, so nothing may run. */
	char path[256];
	snprintf(path, sizeof(path), "%s/airlock.db", f->state);
	sqlite3 *other = NULL;
	assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
	assert_int_equal(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL,
				      NULL),
			 SQLITE_OK);
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"echo:x\"}"),
	       AL_OUTCOME_UNAVAILABLE, "audit_refused");
	assert_int_equal(n_execute, 0);
	sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(other);
	char *m = al_host_metrics_text(f->host);
	assert_non_null(strstr(m, "airlock_audit_write_failures_total 1\n"));
	free(m);
	/* with the lock gone it runs */
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"echo:x\"}"),
	       AL_OUTCOME_COMPLETED, NULL);
	assert_int_equal(n_execute, 1);
}

/* ---- slots ------------------------------------------------------------- */

typedef struct thread_arg {
	fx *f;
	const char *json;
	al_result *res;
	const al_host_context *ctx;
} thread_arg;

static void *run_thread(void *p)
{
	thread_arg *a = p;
	al_host_run_json(a->f->host, a->ctx, a->json, strlen(a->json), NULL,
			 &a->res);
	return NULL;
}

static void test_slots_hold_quota(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [\"tp\"], \"concurrency\": 3, "
		   "\"slot_wait_ms\": 60000,"
		   " \"tenants\": {\"acme\": {\"languages\": \"*\"}}}");
	enum { N = 50 };
	pthread_t t[N];
	thread_arg a[N];
	for (int i = 0; i < N; i++) {
		a[i] = (thread_arg){.f = f, .ctx = &acme,
				    .json = "{\"language\": \"python\", "
					    "\"code\": \"sleep:10\"}"};
		assert_int_equal(pthread_create(&t[i], NULL, run_thread, &a[i]),
				 0);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(t[i], NULL);
		assert_non_null(a[i].res);
		assert_int_equal(a[i].res->outcome, AL_OUTCOME_COMPLETED);
		al_result_free(a[i].res);
	}
	assert_int_equal(n_execute, N);
	assert_true(max_live <= 3);
	assert_true(max_live >= 2);
	char *m = al_host_metrics_text(f->host);
	assert_non_null(strstr(m, "airlock_slots_in_use 0\n"));
	assert_non_null(strstr(m, "airlock_slot_waiters 0\n"));
	free(m);
	size_t records;
	assert_int_equal(al_audit_verify(f->state, &records, NULL), 0);
	assert_int_equal(records, 2 * N);
}

static void test_tenant_quota_and_busy(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [\"tp\"], \"concurrency\": 4, "
		   "\"slot_wait_ms\": 100,"
		   " \"tenants\": {\"acme\": {\"languages\": \"*\", "
		   "\"concurrency\": 1}, \"other\": {\"languages\": \"*\"}}}");
	thread_arg a = {.f = f, .ctx = &acme,
			.json = "{\"language\": \"python\", \"code\": "
				"\"sleep:600\"}"};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, run_thread, &a), 0);
	while (n_live == 0)
		sleep_ms(5);
	/* acme is at its quota: busy after the bounded wait */
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"echo:x\"}"),
	       AL_OUTCOME_UNAVAILABLE, "busy");
	/* another tenant is not held back */
	al_host_context other = {.tenant = "other"};
	expect(run_json(f, &other,
			"{\"language\": \"python\", \"code\": \"echo:x\"}"),
	       AL_OUTCOME_COMPLETED, NULL);
	pthread_join(t, NULL);
	expect(a.res, AL_OUTCOME_COMPLETED, NULL);
	assert_int_equal(n_execute, 2);
	/* the slot was freed: acme runs again */
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"echo:x\"}"),
	       AL_OUTCOME_COMPLETED, NULL);
}

/* ---- idempotency ------------------------------------------------------- */

static void test_idempotency_runs_once(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [\"tp\"], \"concurrency\": 8, "
		   "\"tenants\": {\"acme\": {\"languages\": \"*\"}, "
		   "\"other\": {\"languages\": \"*\"}}}");
	enum { N = 8 };
	pthread_t t[N];
	thread_arg a[N];
	const char *req = "{\"language\": \"python\", \"code\": \"sleep:200\", "
			  "\"idempotency_key\": \"order-1\"}";
	for (int i = 0; i < N; i++) {
		a[i] = (thread_arg){.f = f, .ctx = &acme, .json = req};
		assert_int_equal(pthread_create(&t[i], NULL, run_thread, &a[i]),
				 0);
	}
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(n_execute, 1);
	char first[40];
	memcpy(first, a[0].res->run_id, sizeof(first));
	for (int i = 0; i < N; i++) {
		assert_int_equal(a[i].res->outcome, AL_OUTCOME_COMPLETED);
		assert_string_equal(a[i].res->run_id, first);
		al_result_free(a[i].res);
	}
	/* later: the stored result, still no second run */
	al_result *r = run_json(f, &acme, req);
	assert_int_equal(r->outcome, AL_OUTCOME_COMPLETED);
	al_result_free(r);
	assert_int_equal(n_execute, 1);
	/* same key, different request */
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"sleep:1\", "
			"\"idempotency_key\": \"order-1\"}"),
	       AL_OUTCOME_CONFLICT, "idempotency_conflict");
	/* keys are scoped per tenant */
	al_host_context other = {.tenant = "other"};
	expect(run_json(f, &other, req), AL_OUTCOME_COMPLETED, NULL);
	assert_int_equal(n_execute, 2);
}

/* ---- audit chain ------------------------------------------------------- */

static void sql(const char *state_dir, const char *stmt)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/airlock.db", state_dir);
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	char *msg = NULL;
	if (sqlite3_exec(db, stmt, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("sql: %s", msg);
	sqlite3_close(db);
}

static int sql_rc(const char *state_dir, const char *stmt)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/airlock.db", state_dir);
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	int rc = sqlite3_exec(db, stmt, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

static void copy_state(fx *f, const char *to)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && cp -a '%s' '%s'", to,
		 f->state, to);
	assert_int_equal(system(cmd), 0);
}

static void expect_broken(const char *dir)
{
	al_error *err = NULL;
	assert_true(al_audit_verify(dir, NULL, &err) < 0);
	assert_string_equal(al_error_get_reason(err), "audit_chain_broken");
	al_error_free(err);
}

static void test_audit_chain_detects_tampering(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [\"tp\"], \"tenants\": {\"acme\": "
		   "{\"languages\": [\"python\"]}}}");
	for (int i = 0; i < 3; i++)
		expect(run_json(f, &acme,
				"{\"language\": \"python\", \"code\": "
				"\"echo:x\"}"),
		       AL_OUTCOME_COMPLETED, NULL);
	expect(run_json(f, &acme, "{\"language\": \"sh\", \"code\": \"x\"}"),
	       AL_OUTCOME_DENIED, "gate:language");
	al_host_free(f->host);
	f->host = NULL;
	size_t n = 0;
	assert_int_equal(al_audit_verify(f->state, &n, NULL), 0);
	assert_int_equal(n, 7);

	/* the triggers refuse edits outright */
	assert_int_not_equal(sql_rc(f->state, "UPDATE audit SET record = "
					      "'{}' WHERE seq = 2"),
			     SQLITE_OK);
	assert_int_not_equal(sql_rc(f->state, "DELETE FROM audit WHERE seq = 2"),
			     SQLITE_OK);

	/* the chain does not rely on them */
	char edit[256], del[256], swap[256], head[256];
	snprintf(edit, sizeof(edit), "%s/edit", f->dir);
	snprintf(del, sizeof(del), "%s/del", f->dir);
	snprintf(swap, sizeof(swap), "%s/swap", f->dir);
	snprintf(head, sizeof(head), "%s/head", f->dir);
	static const char drop[] = "DROP TRIGGER audit_no_update;"
				   "DROP TRIGGER audit_no_delete;";
	copy_state(f, edit);
	sql(edit, drop);
	sql(edit, "UPDATE audit SET record = replace(record, "
		  "'\"outcome\":\"completed\"', '\"outcome\":\"failed\"') "
		  "WHERE seq = 4");
	expect_broken(edit);

	copy_state(f, del);
	sql(del, drop);
	sql(del, "DELETE FROM audit WHERE seq = 3");
	expect_broken(del);

	copy_state(f, head);
	sql(head, drop);
	sql(head, "DELETE FROM audit WHERE seq = 1");
	expect_broken(head);

	/* swap two records' contents and hashes wholesale */
	copy_state(f, swap);
	sql(swap, drop);
	sql(swap, "CREATE TEMP TABLE t AS SELECT * FROM audit WHERE seq IN "
		  "(2, 3);"
		  "UPDATE audit SET prev_hash = (SELECT prev_hash FROM t WHERE "
		  "seq = 3), hash = (SELECT hash FROM t WHERE seq = 3), record "
		  "= (SELECT record FROM t WHERE seq = 3) WHERE seq = 2;"
		  "UPDATE audit SET prev_hash = (SELECT prev_hash FROM t WHERE "
		  "seq = 2), hash = (SELECT hash FROM t WHERE seq = 2), record "
		  "= (SELECT record FROM t WHERE seq = 2) WHERE seq = 3;");
	expect_broken(swap);

	/* the untouched original still verifies */
	assert_int_equal(al_audit_verify(f->state, &n, NULL), 0);
}

static void test_audit_records_fields(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [\"tp\"], \"tenants\": {\"acme\": "
		   "{\"languages\": \"*\"}}}");
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": "
			"\"echo:CODETEXT\", \"stdin\": \"STDINTEXT\", "
			"\"env\": {\"MODE\": \"ENVVALUE\"}, \"purpose\": "
			"\"plugin\"}"),
	       AL_OUTCOME_COMPLETED, NULL);
	char *lines = audit_text(f);
	char hex[65];
	al_sha256_hex("echo:CODETEXT", 13, hex);
	assert_non_null(strstr(lines, hex));
	assert_non_null(strstr(lines, "\"event\":\"run.started\""));
	assert_non_null(strstr(lines, "\"event\":\"run.finished\""));
	assert_non_null(strstr(lines, "\"principal\":\"tester\""));
	assert_non_null(strstr(lines, "\"purpose\":\"plugin\""));
	assert_non_null(strstr(lines, "\"provider\":\"tp\""));
	assert_non_null(strstr(lines, "\"outcome\":\"completed\""));
	assert_null(strstr(lines, "CODETEXT"));
	assert_null(strstr(lines, "STDINTEXT"));
	assert_null(strstr(lines, "ENVVALUE"));
	free(lines);
}

/* ---- execution --------------------------------------------------------- */

static void test_host_deadline(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [\"tp\"], \"grace_ms\": 100, "
		   "\"tenants\": {\"acme\": {\"languages\": \"*\"}}}");
	int64_t t0 = al_now_ms();
	al_result *r = run_json(f, &acme,
				"{\"language\": \"python\", \"code\": "
				"\"ignore:1500\", \"limits\": {\"wall_ms\": "
				"200}}");
	int64_t took = al_now_ms() - t0;
	assert_int_equal(r->outcome, AL_OUTCOME_TIMED_OUT);
	assert_false(r->has_exit_code);
	assert_int_equal(al_result_check_shape(r), 0);
	al_result_free(r);
	assert_true(took >= 300);
	assert_true(took < 1200);
	/* the slot was freed although the provider still runs */
	char *m = al_host_metrics_text(f->host);
	assert_non_null(strstr(m, "airlock_slots_in_use 0\n"));
	free(m);
	assert_int_equal(n_live, 1);
	/* al_host_free waits for the stuck provider to return */
	al_host_free(f->host);
	f->host = NULL;
	assert_int_equal(n_live, 0);
	size_t n;
	assert_int_equal(al_audit_verify(f->state, &n, NULL), 0);
	assert_int_equal(n, 2);
}

static void test_output_capped_once(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [\"tp\"], \"tenants\": {\"acme\": "
		   "{\"languages\": \"*\"}}}");
	al_result *r = run_json(f, &acme,
				"{\"language\": \"python\", \"code\": "
				"\"big:100\", \"limits\": {\"output_bytes\": "
				"10}}");
	assert_int_equal(r->outcome, AL_OUTCOME_COMPLETED);
	assert_true(r->truncated[AL_STDOUT]);
	assert_int_equal(r->output_seen[AL_STDOUT], 100);
	assert_string_equal((char *)r->output[AL_STDOUT].data,
			    "xxxxxxxxxx\n[airlock: output truncated]\n");
	al_result_free(r);
	r = run_json(f, &acme,
		     "{\"language\": \"python\", \"code\": \"big:10\", "
		     "\"limits\": {\"output_bytes\": 10}}");
	assert_false(r->truncated[AL_STDOUT]);
	assert_string_equal((char *)r->output[AL_STDOUT].data, "xxxxxxxxxx");
	al_result_free(r);
}

static void test_bad_shape_is_provider_error(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [\"tp\"], \"tenants\": {\"acme\": "
		   "{\"languages\": \"*\"}}}");
	al_result *r = run_json(f, &acme,
				"{\"language\": \"python\", \"code\": "
				"\"badshape\"}");
	assert_int_equal(r->outcome, AL_OUTCOME_UNAVAILABLE);
	assert_string_equal(r->reason, "provider_error");
	assert_false(r->has_exit_code);
	al_result_free(r);
	assert_int_equal(n_execute, 1);
}

typedef struct interrupt_arg {
	fx *f;
	char run_id[40];
	atomic_int have;
} interrupt_arg;

static void on_run_id(void *ctx, const char *run_id)
{
	interrupt_arg *ia = ctx;
	snprintf(ia->run_id, sizeof(ia->run_id), "%s", run_id);
	ia->have = 1;
}

static void *interrupt_thread(void *p)
{
	interrupt_arg *ia = p;
	while (!ia->have || n_live == 0)
		sleep_ms(5);
	al_host_context other = {.tenant = "other"};
	al_error *err = NULL;
	/* another tenant cannot see or stop it */
	assert_int_equal(al_host_interrupt(ia->f->host, &other, ia->run_id,
					   &err),
			 -ESRCH);
	al_error_free(err);
	assert_int_equal(al_host_interrupt(ia->f->host, &acme, "nope", NULL),
			 -ESRCH);
	assert_int_equal(al_host_interrupt(ia->f->host, &acme, ia->run_id,
					   NULL),
			 0);
	return NULL;
}

static void test_interrupt_is_tenant_scoped(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [\"tp\"], \"tenants\": {\"acme\": "
		   "{\"languages\": \"*\"}, \"other\": {\"languages\": "
		   "\"*\"}}}");
	interrupt_arg ia = {.f = f};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, interrupt_thread, &ia), 0);
	al_run_options o = {.on_run_id = on_run_id, .on_run_id_ctx = &ia};
	const char *req = "{\"language\": \"python\", \"code\": \"wait\"}";
	al_result *r = NULL;
	assert_int_equal(al_host_run_json(f->host, &acme, req, strlen(req), &o,
					  &r),
			 0);
	pthread_join(t, NULL);
	assert_string_equal(r->run_id, ia.run_id);
	expect(r, AL_OUTCOME_INTERRUPTED, NULL);
}

static void test_caller_cancel(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [\"tp\"], \"tenants\": {\"acme\": "
		   "{\"languages\": \"*\"}}}");
	al_cancel *c = al_cancel_new();
	al_cancel_fire(c, AL_CANCEL_CANCELLED);
	/* fired before the slot: nothing runs */
	al_run_options o = {.cancel = c};
	const char *req = "{\"language\": \"python\", \"code\": \"wait\"}";
	al_result *r = NULL;
	assert_int_equal(al_host_run_json(f->host, &acme, req, strlen(req), &o,
					  &r),
			 0);
	expect(r, AL_OUTCOME_CANCELLED, "caller");
	assert_int_equal(n_execute, 0);
	al_cancel_free(c);
}

/* ---- secrets ------------------------------------------------------------ */

static void write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	fchmod(fd, mode);
	close(fd);
}

static void test_secrets_delivered_never_recorded(void **state)
{
	fx *f = *state;
	char sdir[128], sfile[192], cfg[1024];
	snprintf(sdir, sizeof(sdir), "%s/secrets", f->dir);
	assert_int_equal(mkdir(sdir, 0700), 0);
	snprintf(sfile, sizeof(sfile), "%s/TEST_TOKEN", sdir);
	write_file(sfile, "hunter2-s3cr3t\n", 0600);
	snprintf(cfg, sizeof(cfg),
		 "{\"providers\": [\"tp\"], \"acknowledged_providers\": "
		 "[\"tp\"], \"secrets\": {\"dir\": \"%s\"},"
		 " \"tenants\": {\"acme\": {\"languages\": \"*\", \"grant\": "
		 "{\"secrets\": [\"TEST_TOKEN\", \"MISSING\"]}}}}",
		 sdir);
	fx_host(f, cfg);
	al_result *r = run_json(f, &acme,
				"{\"language\": \"python\", \"code\": \"env\", "
				"\"grant\": {\"secrets\": [\"TEST_TOKEN\"]}}");
	assert_int_equal(r->outcome, AL_OUTCOME_COMPLETED);
	assert_string_equal((char *)r->output[AL_STDOUT].data, "got 14 bytes");
	char *json = al_result_to_json(r, 0);
	assert_null(strstr(json, "hunter2"));
	free(json);
	al_result_free(r);
	/* granted, but absent from the store: refused before the provider */
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"env\", "
			"\"grant\": {\"secrets\": [\"MISSING\"]}}"),
	       AL_OUTCOME_UNAVAILABLE, "secret_unavailable");
	assert_int_equal(n_execute, 1);
	char *lines = audit_text(f);
	assert_non_null(strstr(lines, "\"secrets\":[\"TEST_TOKEN\"]"));
	assert_null(strstr(lines, "hunter2"));
	free(lines);
	char dbp[256];
	snprintf(dbp, sizeof(dbp), "grep -rq hunter2 '%s'", f->state);
	assert_int_not_equal(system(dbp), 0);

	/* a store others can read is refused at load */
	al_host_free(f->host);
	f->host = NULL;
	chmod(sfile, 0644);
	al_host_options o = {.state_dir = f->state,
			     .providers = test_providers};
	al_config *c = NULL;
	assert_int_equal(al_config_parse(cfg, strlen(cfg), &c, NULL), 0);
	al_host *h = NULL;
	assert_int_equal(al_host_new(c, &o, &h, NULL), 0); /* dir is 0700 */
	al_host_free(h);
	chmod(sdir, 0755);
	al_error *err = NULL;
	assert_true(al_host_new(c, &o, &h, &err) < 0);
	assert_string_equal(al_error_get_reason(err), "secrets.dir");
	al_error_free(err);
	chmod(sdir, 0700);
	/* the file itself is checked at launch */
	assert_int_equal(al_host_new(c, &o, &f->host, NULL), 0);
	expect(run_json(f, &acme,
			"{\"language\": \"python\", \"code\": \"env\", "
			"\"grant\": {\"secrets\": [\"TEST_TOKEN\"]}}"),
	       AL_OUTCOME_UNAVAILABLE, "secret_unavailable");
	al_config_free(c);
	assert_int_equal(n_execute, 1);
}

static void test_capabilities_restricted(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [\"tp\", {\"provider\": \"tp2\", "
		   "\"config\": {\"available\": false}}], \"tenants\": "
		   "{\"acme\": {\"languages\": [\"sh\"]}}}");
	al_facts **facts = NULL;
	size_t n = 0;
	assert_int_equal(al_host_capabilities(f->host, &acme, &facts, &n, NULL),
			 0);
	assert_int_equal(n, 2);
	assert_int_equal(facts[0]->n_languages, 1);
	assert_string_equal(facts[0]->languages[0].language, "sh");
	assert_false(facts[1]->available);
	al_facts_array_free(facts, n);
	al_host_context nobody = {.tenant = "nobody"};
	assert_true(al_host_capabilities(f->host, &nobody, &facts, &n, NULL) <
		    0);
}

static void collect(void *ctx, int stream, const unsigned char *data,
		    size_t len)
{
	char *buf = ctx;
	if (stream == AL_STDOUT)
		strncat(buf, (const char *)data, len);
}

static void test_streaming_forwarded_only_when_granted(void **state)
{
	fx *f = *state;
	fx_host(f, "{\"providers\": [\"tp\"], \"tenants\": {\"acme\": "
		   "{\"languages\": \"*\", \"grant\": {\"streaming\": true}}}}");
	char got[64] = "";
	al_run_options o = {.on_output = collect, .on_output_ctx = got};
	const char *on = "{\"language\": \"python\", \"code\": "
			 "\"stream:live\", \"grant\": {\"streaming\": true}}";
	const char *off = "{\"language\": \"python\", \"code\": "
			  "\"stream:quiet\"}";
	al_result *r = NULL;
	assert_int_equal(al_host_run_json(f->host, &acme, on, strlen(on), &o,
					  &r),
			 0);
	expect(r, AL_OUTCOME_COMPLETED, NULL);
	assert_string_equal(got, "live");
	assert_int_equal(al_host_run_json(f->host, &acme, off, strlen(off), &o,
					  &r),
			 0);
	expect(r, AL_OUTCOME_COMPLETED, NULL);
	assert_string_equal(got, "live");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
		T(test_refusals_never_execute),
		T(test_disabled),
		T(test_pin_widens_grant_for_that_content),
		T(test_plan_pin_covers_the_whole_plan),
		T(test_code_pin_refuses_anything_added),
		T(test_env_policy),
		T(test_default_ceilings),
		T(test_provider_needs_acknowledgement),
		T(test_selection_skips),
		T(test_isolation_required_never_trusted),
		T(test_disabled_provider_and_unavailable),
		T(test_handles_cached_and_quarantined),
		T(test_audit_failure_refuses),
		T(test_slots_hold_quota),
		T(test_tenant_quota_and_busy),
		T(test_idempotency_runs_once),
		T(test_audit_chain_detects_tampering),
		T(test_audit_records_fields),
		T(test_host_deadline),
		T(test_output_capped_once),
		T(test_bad_shape_is_provider_error),
		T(test_interrupt_is_tenant_scoped),
		T(test_caller_cancel),
		T(test_secrets_delivered_never_recorded),
		T(test_capabilities_restricted),
		T(test_streaming_forwarded_only_when_granted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
