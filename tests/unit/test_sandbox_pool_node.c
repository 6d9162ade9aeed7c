/* The warm node interpreter of the sandbox's pools (docs/sandbox.md, "Warm
 * pools"): the class check for javascript (rlimits fixed at the member's
 * start, the variables node reads while starting), and — through real
 * handles — that a pooled javascript run is indistinguishable from a cold
 * one: process.argv, execArgv, the environment (node's and a child's),
 * cwd, globals, process properties, require.main, module paths and
 * cache, stdin, /proc/self/limits, tick order, uncaught exceptions and
 * rejections (stderr, status), process.exit, exitCode, a syntax error,
 * require and import from the workspace, a worker thread and a fork; the
 * CPU and memory limits;
 * that members follow the rlimits of the latest run; and that the runs
 * really took members (the pool's counters).  Skips, saying why, only
 * when the probed facts lack the sandbox or javascript. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <airlock/airlock.h>

#include "core/util.h"
#include "sandbox/pool.h"
#include "sandbox/warm.h"

static const al_provider_ops *ops;
static al_facts *facts;

static int setup(void **state)
{
	(void)state;
	ops = al_provider_lookup("sandbox");
	return ops == NULL || ops->probe(NULL, &facts, NULL) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	al_facts_free(facts);
	return 0;
}

static void need_node(void)
{
	if (!facts->available) {
		print_message("skip: sandbox unavailable: %s\n",
			      facts->unavailable_reason);
		skip();
	}
	if (al_facts_find_language(facts, "javascript") == NULL) {
		print_message("skip: the sandbox facts list no javascript\n");
		skip();
	}
}

/* the limits a host gives a request that sets none: what members start
 * with before their pool has seen a run */
static void host_limits(al_limits *l)
{
	l->cpu_ms = 900000;
	l->file_bytes = 1ull << 30;
	l->open_files = 256;
	l->set |= AL_LIMIT_CPU_MS | AL_LIMIT_FILE_BYTES | AL_LIMIT_OPEN_FILES;
}

/* ---- the class check ----------------------------------------------- */

static void test_class_check(void **state)
{
	(void)state;
	assert_true(al_sb_warm_supported("javascript"));
	assert_true(al_sb_warm_fixed_rlimits("javascript"));
	assert_false(al_sb_warm_fixed_rlimits("python"));
	assert_false(al_sb_warm_fixed_rlimits("sh"));

	al_sb_warm_class c = {.language = "javascript",
			      .network = AL_NETWORK_NONE,
			      .workspace = AL_WORKSPACE_NONE,
			      .tc_path = "/usr/bin/node",
			      .fixed_rlimits = true};
	al_sb_warm_default_limits(&c.rlimits);
	al_request *req = al_request_new();
	assert_non_null(req);
	req->language = strdup("javascript");
	req->grant.network = AL_NETWORK_NONE;
	req->grant.workspace = AL_WORKSPACE_NONE;
	al_limits_apply_defaults(&req->limits);
	al_exec exec = {.request = req};
	/* the library's defaults: no CPU or file size rlimit */
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path),
			    "rlimit");
	host_limits(&req->limits);
	assert_null(al_sb_warm_mismatch(&c, &exec, c.tc_path));
	/* the same whole seconds of CPU: the same RLIMIT_CPU */
	req->limits.cpu_ms = 899001;
	assert_null(al_sb_warm_mismatch(&c, &exec, c.tc_path));
	req->limits.cpu_ms = 899000;
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path),
			    "rlimit");
	req->limits.cpu_ms = 900000;
	req->limits.open_files = 64;
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path),
			    "rlimit");
	req->limits.open_files = 256;
	req->limits.file_bytes = 4096;
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path),
			    "rlimit");
	req->limits.file_bytes = 1ull << 30;
	/* cgroup limits are written at go: any value */
	req->limits.memory_bytes = 64u << 20;
	req->limits.pids = 9;
	assert_null(al_sb_warm_mismatch(&c, &exec, c.tc_path));

	/* variables node, libuv or OpenSSL read while starting: cold */
	static const char *const start_vars[] = {
		"NODE_OPTIONS", "NODE_PATH", "UV_THREADPOOL_SIZE",
		"OPENSSL_CONF", "SSL_CERT_FILE", "LD_PRELOAD", "TZ", "LANG"};
	req->env = calloc(1, sizeof(*req->env));
	assert_non_null(req->env);
	req->n_env = 1;
	for (size_t i = 0; i < sizeof(start_vars) / sizeof(*start_vars);
	     i++) {
		req->env[0].name = strdup(start_vars[i]);
		req->env[0].value = strdup("x");
		assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path),
				    "env");
		free(req->env[0].name);
		free(req->env[0].value);
	}
	/* read later, through process.env (and HOME's module paths are
	 * recomputed): warm */
	static const char *const later_vars[] = {"HOME", "NODE", "NO_COLOR",
						 "FORCE_COLOR", "DEBUG"};
	for (size_t i = 0; i < sizeof(later_vars) / sizeof(*later_vars);
	     i++) {
		req->env[0].name = strdup(later_vars[i]);
		req->env[0].value = strdup("x");
		assert_null(al_sb_warm_mismatch(&c, &exec, c.tc_path));
		free(req->env[0].name);
		free(req->env[0].value);
	}
	req->env[0].name = NULL;
	req->env[0].value = NULL;
	req->n_env = 0;
	/* a stdin stream cannot share the header's pipe */
	al_request_free(req);
}

/* ---- cold vs pooled ------------------------------------------------ */

/* Prints what a program can observe of its start, as JSON, then does
 * what argv[2] says. */
static const char probe_js[] =
	"const fs = require('fs');\n"
	"const st = fs.fstatSync(0);\n"
	"const cp = require('child_process');\n"
	"const d = {argv: process.argv, argv0: process.argv0,\n"
	"  execArgv: process.execArgv, env: process.env,\n"
	"  cenv: cp.execFileSync('/usr/bin/env', {stdio: ['ignore', 'pipe',"
	" 'inherit']}).toString(),\n"
	"  cwd: process.cwd(), globals: Object.getOwnPropertyNames(globalThis)"
	".sort(),\n"
	"  proc: Object.getOwnPropertyNames(process).sort(),\n"
	"  main: require.main === module, mm: process.mainModule === module,\n"
	"  id: module.id, parent: module.parent, paths: module.paths,\n"
	"  gpaths: require('module').globalPaths,\n"
	"  cache: Object.keys(require.cache), file: __filename, dir: __dirname,\n"
	"  stdinMode: (st.mode & 0o170000).toString(8),\n"
	"  stdin: fs.readFileSync(0, 'utf8'), files: fs.readdirSync('.').sort(),\n"
	"  uid: process.getuid(), pid: process.pid, ppid: process.ppid,\n"
	"  events: process.eventNames(),\n"
	"  limits: fs.readFileSync('/proc/self/limits', 'utf8'),\n"
	"  re: String(RegExp.lastMatch) + '|' + String(RegExp.input),\n"
	"  stack: new Error('here').stack.split('\\n')[1],\n"
	"  heap: require('v8').getHeapStatistics().heap_size_limit,\n"
	"  title: process.title, tz: Intl.DateTimeFormat().resolvedOptions()"
	".timeZone};\n"
	"console.log(JSON.stringify(d));\n"
	"const a = process.argv[2] || '';\n"
	"function inner() { throw new TypeError('boom'); }\n"
	"if (a === 'throw') inner();\n"
	"if (a === 'reject') Promise.reject(new Error('rejected'));\n"
	"if (a === 'exit') { console.log('bye'); process.exit(7); }\n"
	"if (a === 'code') process.exitCode = 3;\n"
	/* (no timeout: its order against an immediate is not fixed, even
	 * cold) */
	"if (a === 'ticks') {\n"
	"  setImmediate(() => console.log('immediate'));\n"
	"  Promise.resolve().then(() => console.log('promise'));\n"
	"  process.nextTick(() => console.log('tick'));\n"
	"  queueMicrotask(() => console.log('micro'));\n"
	"  console.log('sync');\n"
	"}\n"
	"if (a === 'worker') {\n"
	"  const { Worker } = require('worker_threads');\n"
	"  new Worker('require(\"worker_threads\").parentPort.postMessage("
	"process.argv.length)', {eval: true})\n"
	"    .on('message', (m) => console.log('worker', m))\n"
	"    .on('exit', (c) => console.log('worker exit', c));\n"
	"}\n"
	"if (a === 'fork') {\n"
	"  const c = cp.fork('child.js', ['x'], {stdio: 'inherit'});\n"
	"  c.on('exit', (k) => console.log('fork exit', k));\n"
	"}\n"
	"if (a === 'modules') {\n"
	"  console.log(require('/workspace/lib/mod.js'));\n"
	"  try { require('./lib/mod.js'); } catch (e) { console.log(e.code, e.message); }\n"
	"  import('/workspace/lib/m.mjs').then((m) => console.log(m.url));\n"
	"}\n"
	"if (a === 'cpu') for (;;) {}\n";

static const char child_js[] =
	"console.log('child', process.argv.slice(1), process.execArgv);\n";

static al_request *probe_request(const char *code, const char *arg,
				 bool with_stdin)
{
	json_t *j = json_pack(
		"{s:s, s:s, s:[s,s], s:{s:s, s:s}, s:{s:s, s:s}, "
		"s:[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}, {s:s, s:s}]}",
		"language", "javascript", "code", code, "argv", arg, "x y",
		"env", "MODE", "fast", "EMPTY", "", "grant", "network", "none",
		"workspace", "rw", "files", "path", "data/in.txt", "content",
		"abc\n", "path", "child.js", "content", child_js, "path",
		"lib/mod.js", "content",
		"module.exports = {parent: module.parent.id, "
		"paths: module.paths};\n",
		"path", "lib/m.mjs", "content",
		"export const url = import.meta.url;\n");
	assert_non_null(j);
	if (with_stdin)
		json_object_set_new(j, "stdin", json_string("line one\nline 2\n"));
	char *text = json_dumps(j, 0);
	json_decref(j);
	assert_non_null(text);
	al_request *req = NULL;
	al_error *e = NULL;
	if (al_request_from_json(text, strlen(text), &req, &e) != 0)
		fail_msg("request: %s", al_error_get_message(e));
	free(text);
	host_limits(&req->limits);
	return req;
}

static al_result *run_on(al_provider_handle *h, al_request *req,
			 const char *id)
{
	al_cancel *cancel = al_cancel_new();
	al_exec exec = {.run_id = id, .request = req, .cancel = cancel};
	al_result *res = al_result_new();
	assert_non_null(res);
	assert_int_equal(ops->execute(h, &exec, res, NULL), 0);
	assert_int_equal(al_result_check_shape(res), 0);
	al_cancel_free(cancel);
	return res;
}

static const char *text_of(const al_result *res, int s)
{
	return res->output[s].data ? (const char *)res->output[s].data : "";
}

/* An uncaught error's frames below Module.runMain: a cold start's entry
 * frame, the loader's there (docs/sandbox.md, residual differences).
 * Returns stderr without them. */
static char *cut_entry_frames(const char *err)
{
	char *out = strdup(err);
	assert_non_null(out);
	char *p = strstr(out, "[as runMain]");
	if (p == NULL)
		return out;
	p = strchr(p, '\n');
	if (p == NULL)
		return out;
	char *q = ++p;
	while (strncmp(q, "    at ", 7) == 0) {
		char *nl = strchr(q, '\n');
		q = nl != NULL ? nl + 1 : q + strlen(q);
	}
	memmove(p, q, strlen(q) + 1);
	return out;
}

static void wait_idle(al_provider_handle *h)
{
	for (int i = 0; i < 1000; i++) {
		al_sb_pool_stats st;
		al_sb_provider_pool_stats(h, &st);
		if (st.idle > 0)
			return;
		usleep(10000);
	}
	fail_msg("no warm member became ready within 10 s");
}

static const char pool_cfg[] =
	"{\"pool\": {\"javascript\": {\"size\": 1, \"workspace\": \"rw\"}}}";

static void compare_case(al_provider_handle *cold, al_provider_handle *warm,
			 const char *arg, bool with_stdin, const char *code)
{
	al_request *req = probe_request(code, arg, with_stdin);
	char id[40];
	al_run_id_new(id); /* the same id: AIRLOCK_RUN_ID is alike */
	al_result *a = run_on(cold, req, id);
	wait_idle(warm);
	al_result *b = run_on(warm, req, id);
	print_message("case %s: cold %s/%d, pooled %s/%d\n%s%s", arg,
		      al_outcome_name(a->outcome), a->exit_code,
		      al_outcome_name(b->outcome), b->exit_code,
		      getenv("AL_TEST_VERBOSE") ? text_of(b, 0) : "",
		      getenv("AL_TEST_VERBOSE") ? text_of(b, 1) : "");
	assert_int_equal(a->outcome, b->outcome);
	assert_int_equal(a->exit_code, b->exit_code);
	assert_int_equal(a->signal, b->signal);
	if ((a->reason == NULL) != (b->reason == NULL) ||
	    (a->reason != NULL && strcmp(a->reason, b->reason) != 0))
		fail_msg("reasons differ");
	assert_string_equal(text_of(a, 0), text_of(b, 0));
	char *ea = cut_entry_frames(text_of(a, 1));
	char *eb = cut_entry_frames(text_of(b, 1));
	assert_string_equal(ea, eb);
	free(ea);
	free(eb);
	assert_true(a->output[strcmp(arg, "syntax") == 0 ? 1 : 0].len > 0);
	al_result_free(a);
	al_result_free(b);
	al_request_free(req);
}

static void test_pooled_is_cold(void **state)
{
	(void)state;
	need_node();
	al_provider_handle *cold = NULL, *warm = NULL;
	assert_int_equal(ops->ensure(NULL, &cold, NULL), 0);
	assert_int_equal(ops->ensure(pool_cfg, &warm, NULL), 0);

	static const char *const args[] = {"state", "throw",  "reject",
					   "exit",  "code",   "ticks",
					   "worker", "fork", "modules"};
	size_t n = sizeof(args) / sizeof(*args);
	for (size_t i = 0; i < n; i++)
		compare_case(cold, warm, args[i], i % 2 == 0, probe_js);
	compare_case(cold, warm, "state", false, probe_js);
	/* a syntax error: the same report */
	compare_case(cold, warm, "syntax", false,
		     "console.log('never');\nlet x = ;\n");

	/* and the runs above were really warm: a member's node was started
	 * as `node -e LOADER` (its /proc/self/cmdline: a documented
	 * residue), a cold one as `node /code/main.js` */
	al_request *req = probe_request(
		"console.log(require('fs').readFileSync('/proc/self/cmdline',\n"
		"  'utf8').split('\\0')[1])\n",
		"x", false);
	char id[40];
	al_run_id_new(id);
	al_result *a = run_on(cold, req, id);
	wait_idle(warm);
	al_result *b = run_on(warm, req, id);
	assert_string_equal(text_of(a, 0), "/code/main.js\n");
	assert_string_equal(text_of(b, 0), "-e\n");
	al_result_free(a);
	al_result_free(b);
	al_request_free(req);

	/* every pooled run took a member: none went cold */
	al_sb_pool_stats st;
	al_sb_provider_pool_stats(warm, &st);
	assert_int_equal(st.taken, n + 3);
	assert_int_equal(st.cold, 0);
	assert_int_equal(ops->release(warm, NULL), 0);
	assert_int_equal(ops->release(cold, NULL), 0);
}

/* The CPU limit counts the start as a cold start's does; a run with other
 * rlimits goes cold once, and the next members start with them. */
static void test_pooled_limits(void **state)
{
	(void)state;
	need_node();
	al_provider_handle *warm = NULL;
	assert_int_equal(ops->ensure(pool_cfg, &warm, NULL), 0);
	char id[40];
	al_sb_pool_stats st;

	al_request *req = probe_request(probe_js, "cpu", false);
	req->limits.cpu_ms = 1000;
	req->limits.wall_ms = 20000;
	wait_idle(warm);
	al_run_id_new(id);
	al_result *res = run_on(warm, req, id);
	assert_int_equal(res->outcome, AL_OUTCOME_KILLED);
	assert_string_equal(res->reason, "cpu_limit");
	al_result_free(res);
	al_sb_provider_pool_stats(warm, &st);
	assert_int_equal(st.taken, 0); /* other rlimits: cold */
	assert_int_equal(st.cold, 1);

	/* the member made since starts with cpu_ms 1000's rlimits */
	wait_idle(warm);
	al_run_id_new(id);
	res = run_on(warm, req, id);
	assert_int_equal(res->outcome, AL_OUTCOME_KILLED);
	assert_string_equal(res->reason, "cpu_limit");
	/* The limit counts node's start in the member, the run's usage
	 * starts at the claim: the start's CPU, a few hundred ms on a
	 * loaded machine, is the difference. */
	assert_true(res->usage.cpu_user_ms + res->usage.cpu_sys_ms >= 400);
	assert_true(res->usage.cpu_user_ms + res->usage.cpu_sys_ms < 2500);
	al_result_free(res);
	al_request_free(req);
	al_sb_provider_pool_stats(warm, &st);
	assert_int_equal(st.taken, 1);
	assert_int_equal(st.cold, 1);

	if (facts->limits & AL_LIMIT_MEMORY_BYTES) {
		req = probe_request("const a = [];\n"
				    "for (;;) a.push(Buffer.alloc(1 << 20, 1));\n",
				    "mem", false);
		req->limits.cpu_ms = 1000;
		req->limits.memory_bytes = 96u << 20;
		req->limits.set |= AL_LIMIT_MEMORY_BYTES;
		wait_idle(warm);
		al_run_id_new(id);
		res = run_on(warm, req, id);
		assert_int_equal(res->outcome, AL_OUTCOME_KILLED);
		assert_string_equal(res->reason, "memory_limit");
		al_result_free(res);
		al_request_free(req);
		al_sb_provider_pool_stats(warm, &st);
		assert_int_equal(st.taken, 2);
	} else {
		print_message("skip part: the facts do not list memory_bytes\n");
	}
	assert_int_equal(ops->release(warm, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_class_check),
		cmocka_unit_test(test_pooled_is_cold),
		cmocka_unit_test(test_pooled_limits),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
