/* Warm pools of the sandbox provider (docs/sandbox.md, "Warm pools"): the
 * config key and its refusals, the class check that sends a request cold,
 * and — through real handles — that a pooled python run is
 * indistinguishable from a cold one (argv, __file__, sys.path, environ,
 * cwd, sys.modules, flags, stdin, traceback, exit status, limits), that
 * the pooled runs really took members (the pool's counters), and that
 * release leaves nothing behind.  Cases needing the sandbox or python
 * skip, saying why, only when the probed facts lack them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <airlock/airlock.h>

#include "core/util.h"
#include "sandbox/context.h"
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

static void need_python(void)
{
	if (!facts->available) {
		print_message("skip: sandbox unavailable: %s\n",
			      facts->unavailable_reason);
		skip();
	}
	if (al_facts_find_language(facts, "python") == NULL) {
		print_message("skip: the sandbox facts list no python\n");
		skip();
	}
}

/* ---- config ---------------------------------------------------------- */

static void expect_bad(const char *json, const char *reason,
		       const char *never)
{
	al_sb_config cfg;
	al_error *err = NULL;
	assert_true(al_sb_config_parse(json, &cfg, &err) < 0);
	assert_int_equal(al_error_get_code(err), AL_ERR_INVALID_CONFIG);
	assert_string_equal(al_error_get_reason(err), reason);
	if (never != NULL) {
		assert_null(strstr(al_error_get_reason(err), never));
		assert_null(strstr(al_error_get_message(err), never));
	}
	al_error_free(err);
}

static void test_config(void **state)
{
	(void)state;
	al_sb_config cfg;
	al_error *err = NULL;
	assert_int_equal(al_sb_config_parse(
				 "{\"pool\": {\"python\": {\"size\": 3, "
				 "\"network\": \"loopback\", \"workspace\": "
				 "\"rw\", \"refill\": false}, \"sh\": {\"size\": "
				 "0}, \"javascript\": {}}}",
				 &cfg, &err),
			 0);
	/* size 0 and absent are off: only python is kept */
	assert_int_equal(cfg.n_pool, 1);
	assert_string_equal(cfg.pool[0].language, "python");
	assert_int_equal(cfg.pool[0].size, 3);
	assert_int_equal(cfg.pool[0].network, AL_NETWORK_LOOPBACK);
	assert_int_equal(cfg.pool[0].workspace, AL_WORKSPACE_RW);
	assert_false(cfg.pool[0].refill);
	al_sb_config_clear(&cfg);

	assert_int_equal(al_sb_config_parse("{\"pool\": {}}", &cfg, &err), 0);
	assert_int_equal(cfg.n_pool, 0);
	al_sb_config_clear(&cfg);
	assert_int_equal(al_sb_config_parse(
				 "{\"pool\": {\"python\": {\"size\": 16}}}",
				 &cfg, &err),
			 0);
	assert_int_equal(cfg.pool[0].size, 16);
	assert_true(cfg.pool[0].refill);
	assert_int_equal(cfg.pool[0].network, AL_NETWORK_NONE);
	assert_int_equal(cfg.pool[0].workspace, AL_WORKSPACE_NONE);
	al_sb_config_clear(&cfg);

	expect_bad("{\"pool\": {\"python\": {\"size\": 17}}}",
		   "pool.python.size", "17");
	expect_bad("{\"pool\": {\"python\": {\"size\": -1}}}",
		   "pool.python.size", NULL);
	expect_bad("{\"pool\": {\"python\": {\"size\": \"2\"}}}",
		   "pool.python.size", NULL);
	expect_bad("{\"pool\": {\"python\": {\"size\": 1.5}}}",
		   "pool.python.size", NULL);
	expect_bad("{\"pool\": {\"cobol-secret\": {\"size\": 1}}}", "pool",
		   "cobol-secret");
	expect_bad("{\"pool\": {\"python\": {\"sizes\": 1}}}", "pool.python",
		   NULL);
	expect_bad("{\"pool\": {\"python\": 1}}", "pool.python", NULL);
	expect_bad("{\"pool\": [1]}", "pool", NULL);
	expect_bad("{\"pool\": {\"python\": {\"size\": 1, \"network\": "
		   "\"host\"}}}",
		   "pool.python.network", "host");
	expect_bad("{\"pool\": {\"python\": {\"size\": 1, \"workspace\": "
		   "\"all-of-it\"}}}",
		   "pool.python.workspace", "all-of-it");
	expect_bad("{\"pool\": {\"python\": {\"size\": 1, \"refill\": 1}}}",
		   "pool.python.refill", NULL);

	/* ensure refuses it the same way */
	al_provider_handle *h = NULL;
	assert_true(ops->ensure("{\"pool\": {\"python\": {\"size\": 99}}}",
				&h, &err) < 0);
	assert_null(h);
	assert_int_equal(al_error_get_code(err), AL_ERR_INVALID_CONFIG);
	assert_string_equal(al_error_get_reason(err), "pool.python.size");
	al_error_free(err);
}

/* ---- the class check --------------------------------------------- */

static void test_class_check(void **state)
{
	(void)state;
	al_request *req = al_request_new();
	assert_non_null(req);
	req->language = strdup("python");
	al_limits_apply_defaults(&req->limits);
	req->grant.network = AL_NETWORK_NONE;
	req->grant.workspace = AL_WORKSPACE_RW;
	al_exec exec = {.run_id = "r", .request = req};
	al_sb_warm_class c = {.language = "python",
			      .network = AL_NETWORK_NONE,
			      .workspace = AL_WORKSPACE_RW,
			      .tc_path = "/usr/bin/python3"};

	assert_null(al_sb_warm_mismatch(&c, &exec, "/usr/bin/python3"));
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, "/opt/py/python3"),
			    "toolchain");
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, NULL), "toolchain");

	req->grant.network = AL_NETWORK_LOOPBACK;
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path),
			    "network");
	req->grant.network = AL_NETWORK_NONE;

	req->grant.workspace = AL_WORKSPACE_RO;
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path),
			    "workspace");
	req->grant.workspace = AL_WORKSPACE_RW;

	/* a bounded workspace is a tmpfs the init mounts: cold */
	req->limits.workspace_bytes = 1 << 20;
	req->limits.set |= AL_LIMIT_WORKSPACE_BYTES;
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path),
			    "workspace_bytes");
	req->limits.workspace_bytes = 0;
	req->limits.set &= ~(unsigned)AL_LIMIT_WORKSPACE_BYTES;

	/* more open files than a member may give itself */
	struct rlimit nofile;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &nofile), 0);
	if (nofile.rlim_max != RLIM_INFINITY) {
		uint64_t keep = req->limits.open_files;
		req->limits.open_files = (uint64_t)nofile.rlim_max + 1;
		assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path),
				    "rlimit");
		req->limits.open_files = keep;
	}

	exec.inbox_dir = "/x/inbox";
	exec.inbox_acks_dir = "/x/acks";
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path),
			    "inbox");
	exec.inbox_dir = exec.inbox_acks_dir = NULL;

	/* variables read while the interpreter starts: cold */
	static const char *const start_vars[] = {"LD_PRELOAD", "LC_ALL",
						 "LANG", "LANGUAGE",
						 "GLIBC_TUNABLES",
						 "MALLOC_ARENA_MAX", "TZ"};
	al_env_var var = {.name = NULL, .value = "x"};
	req->env = &var;
	req->n_env = 1;
	for (size_t i = 0; i < sizeof(start_vars) / sizeof(*start_vars); i++) {
		var.name = (char *)start_vars[i];
		assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path),
				    "env");
	}
	var.name = "MODE";
	assert_null(al_sb_warm_mismatch(&c, &exec, c.tc_path));
	var.name = "TZX"; /* not TZ */
	assert_null(al_sb_warm_mismatch(&c, &exec, c.tc_path));
	req->env = NULL;
	req->n_env = 0;
	const char *const host_env[] = {"LC_CTYPE=C"};
	exec.host_env = host_env;
	exec.n_host_env = 1;
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path), "env");
	exec.host_env = NULL;
	exec.n_host_env = 0;

	free(req->language);
	req->language = strdup("sh");
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path),
			    "language");
	al_sb_warm_class sh = c;
	snprintf(sh.language, sizeof(sh.language), "sh");
	/* sh execs the run's own environment: LC_CTYPE is no reason */
	sh.tc_path = "/bin/sh";
	exec.host_env = host_env;
	exec.n_host_env = 1;
	assert_null(al_sb_warm_mismatch(&sh, &exec, "/bin/sh"));
	free(req->language);
	req->language = strdup("typescript"); /* a build step first */
	snprintf(sh.language, sizeof(sh.language), "typescript");
	assert_string_equal(al_sb_warm_mismatch(&sh, &exec, "/bin/sh"),
			    "language");
	al_request_free(req);
}

/* ---- cold vs pooled ------------------------------------------------ */

/* Prints what a program can observe of its start, as JSON, then does
 * what argv[1] says. */
static const char probe_py[] =
	"import sys, os, json\n"
	"st = os.fstat(0)\n"
	"d = dict(argv=sys.argv, orig=getattr(sys, 'orig_argv', None),\n"
	"  file=__file__, name=__name__, path=sys.path,\n"
	"  environ=dict(os.environ),\n"
	"  cenv=__import__('subprocess').run(['/usr/bin/env'],\n"
	"    capture_output=True, stdin=-3).stdout.decode(),\n"
	"  cwd=os.getcwd(), modules=sorted(sys.modules), flags=str(sys.flags),\n"
	"  main=sorted(k for k in globals()), loader=type(__loader__).__name__,\n"
	"  cached=__cached__, spec=__spec__, pic=sorted(sys.path_importer_cache),\n"
	"  stdin_mode=oct(st.st_mode & 0o170000),\n"
	"  stdin=sys.stdin.read(), hook=sys.excepthook is sys.__excepthook__,\n"
	"  files=sorted(os.listdir('.')), uid=os.getuid(), pid=os.getpid())\n"
	"print(json.dumps(d, sort_keys=True))\n"
	"sys.stdout.flush()\n"
	"a = sys.argv[1] if len(sys.argv) > 1 else ''\n"
	"def inner():\n"
	"    raise ValueError('boom')\n"
	"if a == 'raise':\n"
	"    inner()\n"
	"elif a == 'exit-str':\n"
	"    sys.exit('bye')\n"
	"elif a == 'exit-3':\n"
	"    raise SystemExit(3)\n"
	"elif a == 'exit-none':\n"
	"    sys.exit()\n"
	"elif a == 'kbint':\n"
	"    raise KeyboardInterrupt\n"
	"elif a == 'cpu':\n"
	"    while True:\n"
	"        pass\n"
	"elif a == 'mem':\n"
	"    x = []\n"
	"    while True:\n"
	"        x.append(bytearray(1 << 20))\n"
	"elif a == 'nofile':\n"
	"    import resource\n"
	"    print(resource.getrlimit(resource.RLIMIT_NOFILE))\n";

static al_request *probe_request(const char *code, const char *arg,
				 bool with_stdin)
{
	json_t *j = json_pack(
		"{s:s, s:s, s:[s,s], s:{s:s, s:s}, s:{s:s, s:s}, "
		"s:[{s:s, s:s}]}",
		"language", "python", "code", code, "argv", arg, "x y",
		"env", "MODE", "fast", "EMPTY", "", "grant", "network", "none",
		"workspace", "rw", "files", "path", "data/in.txt", "content",
		"abc\n");
	assert_non_null(j);
	if (with_stdin)
		json_object_set_new(j, "stdin", json_string("line one\nline 2\n"));
	char *text = json_dumps(j, 0);
	json_decref(j);
	assert_non_null(text);
	al_request *req = NULL;
	assert_int_equal(al_request_from_json(text, strlen(text), &req, NULL),
			 0);
	free(text);
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

/* Waits until the pool has `n` members ready, so a pooled run is
 * measured taking a ready member.  What is waited on is the pool's state,
 * not a time: a member that fails to start (the pool's `failed` counter)
 * fails the test at once, and the bound only stops a pool that never gets
 * there (preparing a member takes far less, even on a loaded machine). */
#define READY_WAIT_MS 120000
static void wait_ready(al_provider_handle *h, uint64_t n)
{
	al_sb_pool_stats st;
	al_sb_provider_pool_stats(h, &st);
	uint64_t failed = st.failed;
	for (int i = 0; i < READY_WAIT_MS / 10; i++) {
		al_sb_provider_pool_stats(h, &st);
		if (st.idle >= n)
			return;
		if (st.failed > failed)
			fail_msg("a warm member failed to start");
		usleep(10000);
	}
	fail_msg("%llu warm members not ready within %d s",
		 (unsigned long long)n, READY_WAIT_MS / 1000);
}

static void wait_idle(al_provider_handle *h)
{
	wait_ready(h, 1);
}

static const char pool_cfg[] =
	"{\"pool\": {\"python\": {\"size\": 1, \"workspace\": \"rw\"}}}";

static void compare_case(al_provider_handle *cold, al_provider_handle *warm,
			 const char *arg, bool with_stdin)
{
	al_request *req = probe_request(probe_py, arg, with_stdin);
	char id[40];
	al_run_id_new(id); /* the same id: AIRLOCK_RUN_ID is alike */
	al_result *a = run_on(cold, req, id);
	wait_idle(warm);
	al_result *b = run_on(warm, req, id);
	print_message("case %s: cold %s/%d, pooled %s/%d\n", arg,
		      al_outcome_name(a->outcome), a->exit_code,
		      al_outcome_name(b->outcome), b->exit_code);
	assert_int_equal(a->outcome, b->outcome);
	assert_int_equal(a->exit_code, b->exit_code);
	assert_int_equal(a->signal, b->signal);
	if ((a->reason == NULL) != (b->reason == NULL) ||
	    (a->reason != NULL && strcmp(a->reason, b->reason) != 0))
		fail_msg("reasons differ");
	assert_string_equal(text_of(a, 0), text_of(b, 0));
	assert_string_equal(text_of(a, 1), text_of(b, 1));
	assert_true(a->output[0].len > 0);
	al_result_free(a);
	al_result_free(b);
	al_request_free(req);
}

static void test_pooled_is_cold(void **state)
{
	(void)state;
	need_python();
	al_provider_handle *cold = NULL, *warm = NULL;
	assert_int_equal(ops->ensure(NULL, &cold, NULL), 0);
	assert_int_equal(ops->ensure(pool_cfg, &warm, NULL), 0);

	static const char *const args[] = {"state", "raise", "exit-str",
					   "exit-3", "exit-none", "kbint"};
	for (size_t i = 0; i < sizeof(args) / sizeof(*args); i++)
		compare_case(cold, warm, args[i], i % 2 == 0);
	compare_case(cold, warm, "state", false);

	/* a script that does not compile: the same report */
	al_request *req = probe_request("def (:\n", "x", false);
	char id[40];
	al_run_id_new(id);
	al_result *a = run_on(cold, req, id);
	wait_idle(warm);
	al_result *b = run_on(warm, req, id);
	assert_int_equal(a->outcome, AL_OUTCOME_FAILED);
	assert_int_equal(b->outcome, AL_OUTCOME_FAILED);
	assert_int_equal(a->exit_code, b->exit_code);
	assert_string_equal(text_of(a, 1), text_of(b, 1));
	assert_non_null(strstr(text_of(b, 1), "SyntaxError"));
	al_result_free(a);
	al_result_free(b);
	al_request_free(req);

	/* every pooled run took a member: none went cold */
	al_sb_pool_stats st;
	al_sb_provider_pool_stats(warm, &st);
	assert_int_equal(st.taken, 8);
	assert_int_equal(st.cold, 0);
	al_sb_provider_pool_stats(cold, &st);
	assert_int_equal(st.taken + st.prepared, 0);
	assert_int_equal(ops->release(warm, NULL), 0);
	assert_int_equal(ops->release(cold, NULL), 0);
}

/* sh (and every language without a pre-start): the member waits before
 * its execve, so the run is the cold exec itself — compared here with
 * what the shell sees of argv, environment, stdin, cwd, ids, privileges,
 * rlimits and its exit status. */
static const char probe_sh[] =
	"echo \"0=$0 #=$# @=$*\"\n"
	"env | sort\n"
	"pwd; id; ulimit -a\n"
	"grep -E '^(Cap|NoNewPrivs|Seccomp:|Uid|Gid)' /proc/self/status\n"
	"ls -la /proc/self/fd/ | awk '{sub(/:\\[.*/, \"\", $NF); print $1, $NF}' | sort\n"
	"cat\n"
	"cat data/in.txt\n"
	"echo to-stderr >&2\n"
	"exit 7\n";

static void test_pooled_sh_is_cold(void **state)
{
	(void)state;
	if (!facts->available || al_facts_find_language(facts, "sh") == NULL) {
		print_message("skip: the sandbox facts list no sh\n");
		skip();
	}
	static const char cfg[] =
		"{\"pool\": {\"sh\": {\"size\": 1, \"workspace\": \"rw\"}}}";
	al_provider_handle *cold = NULL, *warm = NULL;
	assert_int_equal(ops->ensure(NULL, &cold, NULL), 0);
	assert_int_equal(ops->ensure(cfg, &warm, NULL), 0);
	for (int i = 0; i < 2; i++) {
		al_request *req = probe_request(probe_sh, "one", i == 0);
		free(req->language);
		req->language = strdup("sh");
		req->limits.cpu_ms = 3000;
		req->limits.set |= AL_LIMIT_CPU_MS;
		char id[40];
		al_run_id_new(id);
		al_result *a = run_on(cold, req, id);
		wait_idle(warm);
		al_result *b = run_on(warm, req, id);
		assert_int_equal(a->outcome, AL_OUTCOME_FAILED);
		assert_int_equal(b->outcome, AL_OUTCOME_FAILED);
		assert_int_equal(a->exit_code, 7);
		assert_int_equal(b->exit_code, 7);
		assert_string_equal(text_of(a, 0), text_of(b, 0));
		assert_string_equal(text_of(a, 1), text_of(b, 1));
		assert_non_null(strstr(text_of(b, 0), "MODE=fast"));
		al_result_free(a);
		al_result_free(b);
		al_request_free(req);
	}
	al_sb_pool_stats st;
	al_sb_provider_pool_stats(warm, &st);
	assert_int_equal(st.taken, 2);
	assert_int_equal(st.cold, 0);
	assert_int_equal(ops->release(warm, NULL), 0);
	assert_int_equal(ops->release(cold, NULL), 0);
}

/* Limits reach a member: cgroup values written at go, rlimits set by the
 * loader (the CPU its start used not counted against the run). */
static void test_pooled_limits(void **state)
{
	(void)state;
	need_python();
	al_provider_handle *warm = NULL;
	assert_int_equal(ops->ensure(pool_cfg, &warm, NULL), 0);
	char id[40];

	al_request *req = probe_request(probe_py, "cpu", false);
	req->limits.cpu_ms = 1000;
	req->limits.set |= AL_LIMIT_CPU_MS;
	/* far past the CPU second even when the machine's cores are shared
	 * by many: the CPU limit, not the wall, must end it */
	req->limits.wall_ms = 120000;
	wait_idle(warm);
	al_run_id_new(id);
	al_result *res = run_on(warm, req, id);
	assert_int_equal(res->outcome, AL_OUTCOME_KILLED);
	assert_string_equal(res->reason, "cpu_limit");
	/* the whole second (and at most the start's part of another).  The
	 * kernel counts RLIMIT_CPU in ticks, each charged whole to the
	 * process running when it fires: on a loaded machine the program is
	 * charged for time others ran inside them and killed with less CPU
	 * than its limit by the cgroup's exact count (docs/testing.md,
	 * "Load"), hence the lower bound's room. */
	assert_true(res->usage.cpu_user_ms + res->usage.cpu_sys_ms >= 500);
	assert_true(res->usage.cpu_user_ms + res->usage.cpu_sys_ms < 2500);
	al_result_free(res);
	al_request_free(req);

	if (facts->limits & AL_LIMIT_MEMORY_BYTES) {
		req = probe_request(probe_py, "mem", false);
		req->limits.memory_bytes = 64u << 20;
		req->limits.set |= AL_LIMIT_MEMORY_BYTES;
		wait_idle(warm);
		al_run_id_new(id);
		res = run_on(warm, req, id);
		assert_int_equal(res->outcome, AL_OUTCOME_KILLED);
		assert_string_equal(res->reason, "memory_limit");
		assert_true(res->usage.peak_memory_bytes <= (64u << 20));
		al_result_free(res);
		al_request_free(req);
		/* and raised above the idle member's 512 MiB */
		req = probe_request(probe_py, "state", false);
		req->limits.memory_bytes = 1024u << 20;
		req->limits.set |= AL_LIMIT_MEMORY_BYTES;
		wait_idle(warm);
		al_run_id_new(id);
		res = run_on(warm, req, id);
		assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
		al_result_free(res);
		al_request_free(req);
	} else {
		print_message("skip part: the facts do not list memory_bytes\n");
	}

	req = probe_request(probe_py, "nofile", false);
	req->limits.open_files = 77;
	req->limits.set |= AL_LIMIT_OPEN_FILES;
	wait_idle(warm);
	al_run_id_new(id);
	res = run_on(warm, req, id);
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	assert_non_null(strstr(text_of(res, 0), "(77, 77)"));
	al_result_free(res);
	al_request_free(req);

	al_sb_pool_stats st;
	al_sb_provider_pool_stats(warm, &st);
	assert_int_equal(st.cold, 0);
	assert_true(st.taken >= 3);
	assert_int_equal(ops->release(warm, NULL), 0);
}

/* Several threads at once on one pooled handle: every run ends as it
 * should, members are never shared (taken + cold = runs), and a pooled
 * run still times out at its deadline (counted from go). */
struct conc {
	al_provider_handle *h;
	int ok;
};

static void *conc_main(void *arg)
{
	struct conc *c = arg;
	for (int i = 0; i < 3; i++) {
		al_request *req = probe_request("import sys\nprint(sys.argv[1])\n",
						"hi", false);
		char id[40];
		al_run_id_new(id);
		al_cancel *cancel = al_cancel_new();
		al_exec exec = {.run_id = id, .request = req, .cancel = cancel};
		al_result *res = al_result_new();
		if (ops->execute(c->h, &exec, res, NULL) == 0 &&
		    res->outcome == AL_OUTCOME_COMPLETED &&
		    strcmp(text_of(res, 0), "hi\n") == 0)
			c->ok++;
		al_result_free(res);
		al_cancel_free(cancel);
		al_request_free(req);
	}
	return NULL;
}

static void test_pooled_concurrent_and_deadline(void **state)
{
	(void)state;
	need_python();
	al_provider_handle *warm = NULL;
	assert_int_equal(ops->ensure(pool_cfg, &warm, NULL), 0);
	/* one member ready before the threads start: at least one run takes
	 * it however slowly later members are prepared (a take waits for one
	 * being prepared only so long, then goes cold) */
	wait_idle(warm);
	struct conc c[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		c[i] = (struct conc){.h = warm};
		assert_int_equal(pthread_create(&t[i], NULL, conc_main, &c[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(c[i].ok, 3);
	}
	al_sb_pool_stats st;
	al_sb_provider_pool_stats(warm, &st);
	assert_int_equal(st.taken + st.cold, 12);
	assert_true(st.taken >= 1);
	assert_true(st.prepared >= st.taken);

	al_request *req = probe_request("import time\ntime.sleep(30)\n", "x",
					false);
	req->limits.wall_ms = 300;
	req->limits.set |= AL_LIMIT_WALL_MS;
	wait_idle(warm);
	char id[40];
	al_run_id_new(id);
	al_result *res = run_on(warm, req, id);
	assert_int_equal(res->outcome, AL_OUTCOME_TIMED_OUT);
	/* ended at its deadline, long before the program's 30 s */
	assert_true(res->usage.wall_ms >= 300 && res->usage.wall_ms < 25000);
	al_result_free(res);
	al_request_free(req);
	al_sb_provider_pool_stats(warm, &st);
	assert_int_equal(st.taken + st.cold, 13);
	assert_int_equal(ops->release(warm, NULL), 0);
}

/* A header far beyond a pipe's buffer (argv of 8 x 60 KB): python reads
 * it while the host writes; a waiting sh has 256 KiB of room, so its
 * run goes cold — both complete with the whole argv. */
static void test_big_header(void **state)
{
	(void)state;
	need_python();
	al_provider_handle *warm = NULL;
	assert_int_equal(
		ops->ensure("{\"pool\": {\"python\": {\"size\": 1}, "
			    "\"sh\": {\"size\": 1}}}",
			    &warm, NULL),
		0);
	char *big = malloc(60001);
	assert_non_null(big);
	memset(big, 'a', 60000);
	big[60000] = '\0';
	static const char *const langs[] = {"python", "sh"};
	static const char *const code[] = {
		"import sys\nprint(len(sys.argv), sum(map(len, sys.argv[1:])))\n",
		"n=0; for a; do n=$((n+${#a})); done; echo $(($#+1)) $n\n"};
	for (int l = 0; l < 2; l++) {
		al_request *req = al_request_new();
		req->language = strdup(langs[l]);
		al_bytes_clear(&req->code);
		assert_int_equal(
			al_bytes_set(&req->code, code[l], strlen(code[l])), 0);
		al_limits_apply_defaults(&req->limits);
		req->argc = 8;
		req->argv = calloc(9, sizeof(char *));
		for (int i = 0; i < 8; i++)
			req->argv[i] = strdup(big);
		/* python's and sh's: one ready of either is not enough, the
		 * other language's take would wait and might go cold */
		wait_ready(warm, l == 0 ? 2 : 1);
		char id[40];
		al_run_id_new(id);
		al_result *res = run_on(warm, req, id);
		assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
		assert_string_equal(text_of(res, 0), "9 480000\n");
		al_result_free(res);
		al_request_free(req);
	}
	free(big);
	al_sb_pool_stats st;
	al_sb_provider_pool_stats(warm, &st);
	/* both took a member; sh's could not hold the header and was
	 * destroyed unused, the run went cold */
	assert_int_equal(st.taken, 2);
	assert_int_equal(ops->release(warm, NULL), 0);
}

static bool dir_has_prefix(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return false;
	bool found = false;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			found = true;
	closedir(d);
	return found;
}

/* A request a member cannot serve runs cold (and says so in the
 * counters); release removes idle members entirely. */
static void test_mismatch_cold_and_release(void **state)
{
	(void)state;
	need_python();
	char base[] = "/tmp/al-pool-test-XXXXXX";
	assert_non_null(mkdtemp(base));
	char cfg[256];
	snprintf(cfg, sizeof(cfg),
		 "{\"run_dir\": \"%s\", \"pool\": {\"python\": {\"size\": 2}}}",
		 base);
	al_provider_handle *warm = NULL;
	assert_int_equal(ops->ensure(cfg, &warm, NULL), 0);
	wait_idle(warm);

	const char *simple = "{\"language\": \"python\", \"code\": "
			     "\"print(1)\", \"grant\": {\"workspace\": \"rw\"}}";
	al_request *req = NULL;
	assert_int_equal(
		al_request_from_json(simple, strlen(simple), &req, NULL), 0);
	/* the members are workspace none; this asks rw */
	char id[40];
	al_run_id_new(id);
	al_result *res = run_on(warm, req, id);
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	al_result_free(res);
	al_sb_pool_stats st;
	al_sb_provider_pool_stats(warm, &st);
	assert_int_equal(st.taken, 0);
	assert_int_equal(st.cold, 1);

	req->grant.workspace = AL_WORKSPACE_NONE;
	al_run_id_new(id);
	res = run_on(warm, req, id);
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	al_result_free(res);
	al_sb_provider_pool_stats(warm, &st);
	assert_int_equal(st.taken, 1);
	al_request_free(req);

	wait_ready(warm, 2);
	al_sb_provider_pool_stats(warm, &st);
	assert_int_equal(st.idle, 2);
	assert_true(dir_has_prefix(base, "warm-"));
	char cg[64];
	/* every cgroup of this process's runs and members
	 * (al_sb_cgrun_name) */
	snprintf(cg, sizeof(cg), "airlock-%d-", (int)getpid());
	assert_int_equal(ops->release(warm, NULL), 0);
	/* no member's directory, cgroup or process left */
	assert_false(dir_has_prefix(base, "warm-"));
	al_sb_cgroups where;
	al_sb_cgroups_locate(&where);
	if (where.v2_base != NULL)
		assert_false(dir_has_prefix(where.v2_base, cg));
	for (int i = 0; i < AL_CG__N; i++)
		if (where.v1_base[i] != NULL)
			assert_false(dir_has_prefix(where.v1_base[i], cg));
	al_sb_cgroups_clear(&where);
	assert_true(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
	assert_int_equal(rmdir(base), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_class_check),
		cmocka_unit_test(test_pooled_is_cold),
		cmocka_unit_test(test_pooled_sh_is_cold),
		cmocka_unit_test(test_pooled_limits),
		cmocka_unit_test(test_pooled_concurrent_and_deadline),
		cmocka_unit_test(test_big_header),
		cmocka_unit_test(test_mismatch_cold_and_release),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
