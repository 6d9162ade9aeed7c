/* The sandbox provider driven through its operations table: probe facts,
 * ensure (and a refused config), every outcome a sandboxed run can have
 * (completed, failed, killed with its reason, timed_out, interrupted,
 * cancelled) and the refusals decided before anything starts.  Cases that
 * need a mechanism skip, saying why, only when the probed facts lack it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include <airlock/airlock.h>

#include "core/util.h"

static const al_provider_ops *ops;
static al_provider_handle *handle;
static al_facts *facts;

static int setup(void **state)
{
	(void)state;
	ops = al_provider_lookup("sandbox");
	if (ops == NULL || ops->probe(NULL, &facts, NULL) < 0)
		return -1;
	if (!facts->available)
		return 0; /* every case skips, saying why */
	return ops->ensure(NULL, &handle, NULL);
}

static int teardown(void **state)
{
	(void)state;
	int rc = handle ? ops->release(handle, NULL) : 0;
	al_facts_free(facts);
	return rc;
}

static void need_available(void)
{
	if (!facts->available) {
		print_message("skip: sandbox unavailable: %s\n",
			      facts->unavailable_reason);
		skip();
	}
}

/* Whether the probe reports a host uid per run ("uid_mode":
 * "per_run_pool"), rather than the caller's own for all ("own_uid"). */
static bool per_run_uids(void)
{
	json_t *m = facts->mechanism_json != NULL
			    ? json_loads(facts->mechanism_json, 0, NULL)
			    : NULL;
	const char *mode = json_string_value(json_object_get(m, "uid_mode"));
	assert_non_null(mode);
	bool pool = strcmp(mode, "per_run_pool") == 0;
	if (!pool)
		assert_string_equal(mode, "own_uid");
	json_decref(m);
	return pool;
}

static bool need_limit(unsigned bit)
{
	if (facts->limits & bit)
		return true;
	print_message("skip: the sandbox facts do not list limit %s\n",
		      al_limit_name(bit));
	return false;
}

static al_request *make_request(const char *lang, const char *code)
{
	al_request *req = al_request_new();
	assert_non_null(req);
	req->language = strdup(lang);
	assert_non_null(req->language);
	al_bytes_clear(&req->code);
	assert_int_equal(al_bytes_set(&req->code, code, strlen(code)), 0);
	al_limits_apply_defaults(&req->limits);
	return req;
}

static void set_limit(al_request *req, unsigned bit, uint64_t v)
{
	req->limits.set |= bit;
	if (bit == AL_LIMIT_WALL_MS)
		req->limits.wall_ms = v;
	else if (bit == AL_LIMIT_MEMORY_BYTES)
		req->limits.memory_bytes = v;
	else if (bit == AL_LIMIT_CPU_MS)
		req->limits.cpu_ms = v;
	else if (bit == AL_LIMIT_WORKSPACE_BYTES)
		req->limits.workspace_bytes = v;
	else if (bit == AL_LIMIT_FILE_BYTES)
		req->limits.file_bytes = v;
	else
		fail_msg("unexpected limit");
}

static al_result *run_as(al_request *req, al_cancel *cancel, const char *id)
{
	al_cancel *own = cancel != NULL ? NULL : al_cancel_new();
	al_exec exec = {.run_id = id, .request = req,
			.cancel = cancel != NULL ? cancel : own};
	al_result *res = al_result_new();
	assert_non_null(res);
	assert_int_equal(ops->execute(handle, &exec, res, NULL), 0);
	assert_int_equal(al_result_check_shape(res), 0);
	assert_non_null(res->provider);
	assert_string_equal(res->provider->provider, "sandbox");
	al_cancel_free(own);
	return res;
}

static al_result *run(al_request *req)
{
	char id[40];
	al_run_id_new(id);
	return run_as(req, NULL, id);
}

static const char *out(const al_result *res, int stream)
{
	return res->output[stream].data ? (const char *)res->output[stream].data
					 : "";
}

static void test_probe_facts(void **state)
{
	(void)state;
	need_available();
	assert_int_equal(facts->safety_class, AL_SAFETY_SANDBOXED);
	assert_true(facts->isolation.process_contained);
	assert_true(facts->isolation.host_filesystem_restricted);
	assert_true(facts->isolation.privilege_escalation_blocked);
	assert_true(facts->isolation.syscalls_restricted);
	assert_true(facts->isolation.network_restricted);
	assert_non_null(al_facts_find_language(facts, "sh"));
	assert_non_null(facts->mechanism_json);
	assert_non_null(strstr(facts->mechanism_json, "\"seccomp\":true"));
	assert_true(facts->network & (1u << AL_NETWORK_NONE));
	/* host network is offered only when configured */
	assert_false(facts->network & (1u << AL_NETWORK_HOST));
	assert_int_equal(ops->health(handle, NULL), 0);
}

static void test_bad_config_refused(void **state)
{
	(void)state;
	al_provider_handle *h = NULL;
	al_error *err = NULL;
	assert_true(ops->ensure("{\"no_such_key\": 1}", &h, &err) < 0);
	assert_null(h);
	assert_int_equal(al_error_get_code(err), AL_ERR_INVALID_CONFIG);
	al_error_free(err);
	err = NULL;
	al_facts *f = NULL;
	assert_true(ops->probe("{\"uid_count\": 0}", &f, &err) < 0);
	assert_null(f);
	al_error_free(err);
}

static void test_completed_inside(void **state)
{
	(void)state;
	need_available();
	al_request *req = make_request(
		"sh", "echo $((6*7)); hostname; pwd; id -u; cat /proc/self/uid_map");
	al_result *res = run(req);
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	assert_int_equal(res->exit_code, 0);
	const char *o = out(res, AL_STDOUT);
	assert_true(strncmp(o, "42\nairlock\n/workspace\n0\n", 24) == 0);
	/* root inside maps to one unprivileged uid outside */
	unsigned in = 1, host = 0, n = 0;
	assert_int_equal(sscanf(o + 24, "%u %u %u", &in, &host, &n), 3);
	assert_int_equal(in, 0);
	assert_int_equal(n, 1);
	assert_int_not_equal(host, 0);
	al_result_free(res);
	al_request_free(req);
}

static void test_failed_and_stdin(void **state)
{
	(void)state;
	need_available();
	al_request *req = make_request("sh", "cat; echo oops >&2; exit 3");
	req->has_stdin = true;
	al_bytes_clear(&req->stdin_data);
	al_bytes_set(&req->stdin_data, "in\n", 3);
	al_result *res = run(req);
	assert_int_equal(res->outcome, AL_OUTCOME_FAILED);
	assert_int_equal(res->exit_code, 3);
	assert_string_equal(out(res, AL_STDOUT), "in\n");
	assert_string_equal(out(res, AL_STDERR), "oops\n");
	al_result_free(res);
	al_request_free(req);
}

static void test_killed_by_signal(void **state)
{
	(void)state;
	need_available();
	al_request *req = make_request("sh", "kill -SEGV $$");
	al_result *res = run(req);
	assert_int_equal(res->outcome, AL_OUTCOME_KILLED);
	assert_int_equal(res->signal, SIGSEGV);
	assert_string_equal(res->reason, "signal");
	al_result_free(res);
	al_request_free(req);
}

static void test_killed_memory_limit(void **state)
{
	(void)state;
	need_available();
	if (!need_limit(AL_LIMIT_MEMORY_BYTES))
		skip();
	al_request *req = make_request("python", "b = bytearray(256 << 20)\n");
	set_limit(req, AL_LIMIT_MEMORY_BYTES, 48u << 20);
	al_result *res = run(req);
	assert_int_equal(res->outcome, AL_OUTCOME_KILLED);
	assert_string_equal(res->reason, "memory_limit");
	assert_true(res->usage.peak_memory_bytes <= 48u << 20);
	al_result_free(res);
	al_request_free(req);
}

static void test_timed_out(void **state)
{
	(void)state;
	need_available();
	al_request *req = make_request("sh", "trap '' TERM; sleep 30 & wait; sleep 30");
	set_limit(req, AL_LIMIT_WALL_MS, 300);
	al_result *res = run(req);
	assert_int_equal(res->outcome, AL_OUTCOME_TIMED_OUT);
	assert_false(res->has_exit_code);
	assert_true(res->usage.wall_ms < 5000);
	al_result_free(res);
	al_request_free(req);
}

struct later {
	const char *run_id;
	al_cancel *cancel;
	int rc;
};

static void *interrupt_later(void *arg)
{
	struct later *l = arg;
	usleep(300 * 1000);
	l->rc = ops->interrupt(handle, l->run_id, NULL);
	return NULL;
}

static void *cancel_later(void *arg)
{
	struct later *l = arg;
	usleep(300 * 1000);
	al_cancel_fire(l->cancel, AL_CANCEL_CANCELLED);
	return NULL;
}

static void test_interrupted(void **state)
{
	(void)state;
	need_available();
	assert_true(ops->interrupt(handle, "no-such-run", NULL) < 0);
	char id[40];
	al_run_id_new(id);
	al_cancel *c = al_cancel_new();
	struct later l = {.run_id = id, .cancel = c, .rc = 1};
	pthread_t t;
	pthread_create(&t, NULL, interrupt_later, &l);
	al_request *req = make_request("sh", "sleep 30");
	al_result *res = run_as(req, c, id);
	pthread_join(t, NULL);
	assert_int_equal(l.rc, 0);
	assert_int_equal(res->outcome, AL_OUTCOME_INTERRUPTED);
	assert_true(res->usage.wall_ms < 5000);
	al_result_free(res);
	al_request_free(req);
	al_cancel_free(c);
}

static void test_cancelled(void **state)
{
	(void)state;
	need_available();
	char id[40];
	al_run_id_new(id);
	al_cancel *c = al_cancel_new();
	struct later l = {.run_id = id, .cancel = c};
	pthread_t t;
	pthread_create(&t, NULL, cancel_later, &l);
	al_request *req = make_request("sh", "sleep 30");
	al_result *res = run_as(req, c, id);
	pthread_join(t, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_CANCELLED);
	al_result_free(res);
	al_request_free(req);
	al_cancel_free(c);
}

static void test_refusals(void **state)
{
	(void)state;
	need_available();
	al_request *req = make_request("cobol", "x");
	al_result *res = run(req);
	assert_int_equal(res->outcome, AL_OUTCOME_UNSUPPORTED_LANGUAGE);
	al_result_free(res);
	al_request_free(req);

	req = make_request("sh", "true");
	req->grant.network = AL_NETWORK_HOST;
	res = run(req);
	assert_int_equal(res->outcome, AL_OUTCOME_UNENFORCEABLE_LIMIT);
	assert_string_equal(res->reason, "network");
	assert_false(res->has_exit_code);
	assert_int_equal(res->output_seen[AL_STDOUT], 0);
	al_result_free(res);
	al_request_free(req);
}

struct live {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool started;
	al_cancel *cancel;
	al_request *req;
	al_result *res;
};

static void on_output(void *ctx, int stream, const unsigned char *data,
		      size_t len)
{
	(void)stream;
	(void)data;
	(void)len;
	struct live *l = ctx;
	pthread_mutex_lock(&l->lock);
	l->started = true;
	pthread_cond_signal(&l->cond);
	pthread_mutex_unlock(&l->lock);
}

static void *run_streaming(void *arg)
{
	struct live *l = arg;
	char id[40];
	al_run_id_new(id);
	al_exec exec = {.run_id = id, .request = l->req, .cancel = l->cancel,
			.on_output = on_output, .on_output_ctx = l};
	l->res = al_result_new();
	if (ops->execute(handle, &exec, l->res, NULL) < 0)
		l->res->outcome = AL_OUTCOME__COUNT;
	return NULL;
}

static void test_release_refused_while_running(void **state)
{
	(void)state;
	need_available();
	struct live l = {.lock = PTHREAD_MUTEX_INITIALIZER,
			 .cond = PTHREAD_COND_INITIALIZER};
	l.cancel = al_cancel_new();
	l.req = make_request("sh", "echo started; sleep 30");
	l.req->grant.streaming = true;
	pthread_t t;
	pthread_create(&t, NULL, run_streaming, &l);
	pthread_mutex_lock(&l.lock);
	while (!l.started)
		pthread_cond_wait(&l.cond, &l.lock);
	pthread_mutex_unlock(&l.lock);
	al_error *err = NULL;
	assert_true(ops->release(handle, &err) < 0);
	assert_int_equal(al_error_get_errno(err), EBUSY);
	al_error_free(err);
	al_cancel_fire(l.cancel, AL_CANCEL_CANCELLED);
	pthread_join(t, NULL);
	assert_int_equal(l.res->outcome, AL_OUTCOME_CANCELLED);
	assert_string_equal(out(l.res, AL_STDOUT), "started\n");
	al_result_free(l.res);
	al_request_free(l.req);
	al_cancel_free(l.cancel);
}

struct conc {
	al_request *req;
	al_result *res;
};

static void *conc_run(void *arg)
{
	struct conc *c = arg;
	char id[40];
	al_run_id_new(id);
	al_cancel *cancel = al_cancel_new();
	al_exec exec = {.run_id = id, .request = c->req, .cancel = cancel};
	c->res = al_result_new();
	if (ops->execute(handle, &exec, c->res, NULL) < 0)
		c->res->outcome = AL_OUTCOME__COUNT;
	al_cancel_free(cancel);
	return NULL;
}

/* Runs started from several threads at once (as the daemon does): each
 * gets its own host uid (or, unprivileged, the caller's, as the probe
 * says) and its own /tmp, and none waits on a lock another
 * thread held when its sandbox was cloned. */
static void test_concurrent_runs_apart(void **state)
{
	(void)state;
	need_available();
	bool pool = per_run_uids();
	enum { N = 6 };
	struct conc cs[N];
	pthread_t th[N];
	al_request *req = make_request(
		"sh", "ls -A /tmp | wc -l; touch /tmp/mine; sleep 0.3; "
		      "cat /proc/self/uid_map");
	for (int i = 0; i < N; i++) {
		cs[i].req = req;
		pthread_create(&th[i], NULL, conc_run, &cs[i]);
	}
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	unsigned host[N];
	for (int i = 0; i < N; i++) {
		assert_int_equal(cs[i].res->outcome, AL_OUTCOME_COMPLETED);
		unsigned in, n;
		assert_int_equal(sscanf(out(cs[i].res, AL_STDOUT), "0 %u %u %u",
					&in, &host[i], &n),
				 3);
		/* a uid of its own each (root's pool), or the caller's own
		 * for every run (unprivileged: the only uid it may map) */
		for (int j = 0; j < i; j++)
			if (pool)
				assert_int_not_equal(host[i], host[j]);
			else
				assert_int_equal(host[i], (unsigned)geteuid());
	}
	for (int i = 0; i < N; i++)
		al_result_free(cs[i].res);
	al_request_free(req);
}

static void test_limit_reasons(void **state)
{
	(void)state;
	need_available();
	al_request *req = make_request("sh", "while :; do :; done");
	set_limit(req, AL_LIMIT_CPU_MS, 500);
	al_result *res = run(req);
	assert_int_equal(res->outcome, AL_OUTCOME_KILLED);
	assert_string_equal(res->reason, "cpu_limit");
	assert_int_equal(res->signal, SIGXCPU);
	al_result_free(res);
	al_request_free(req);

	req = make_request("sh", "exec head -c 100000 /dev/zero > /tmp/f");
	set_limit(req, AL_LIMIT_FILE_BYTES, 1000);
	res = run(req);
	assert_int_equal(res->outcome, AL_OUTCOME_KILLED);
	assert_string_equal(res->reason, "file_size_limit");
	al_result_free(res);
	al_request_free(req);
}

static void add_file(al_request *req, const char *path, size_t len)
{
	req->files = calloc(1, sizeof(*req->files));
	assert_non_null(req->files);
	req->files[0].path = strdup(path);
	req->files[0].mode = 0644;
	char *data = malloc(len);
	assert_non_null(data);
	memset(data, 'x', len);
	assert_int_equal(al_bytes_set(&req->files[0].content, data, len), 0);
	free(data);
	req->n_files = 1;
}

static void test_bounded_workspace(void **state)
{
	(void)state;
	need_available();
	if (!need_limit(AL_LIMIT_WORKSPACE_BYTES))
		skip();
	al_request *req = make_request(
		"sh", "wc -c < in/data; head -c 300000 /dev/zero > big; "
		      "echo rc=$?");
	req->grant.workspace = AL_WORKSPACE_RW;
	set_limit(req, AL_LIMIT_WORKSPACE_BYTES, 128 * 1024);
	add_file(req, "in/data", 1000);
	al_result *res = run(req);
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	assert_string_equal(out(res, AL_STDOUT), "1000\nrc=1\n");
	assert_non_null(strstr(out(res, AL_STDERR), "No space left"));
	al_result_free(res);
	al_request_free(req);

	req = make_request("sh", "echo RAN");
	req->grant.workspace = AL_WORKSPACE_RW;
	set_limit(req, AL_LIMIT_WORKSPACE_BYTES, 64 * 1024);
	add_file(req, "big", 200 * 1024);
	res = run(req);
	assert_int_equal(res->outcome, AL_OUTCOME_UNAVAILABLE);
	assert_string_equal(res->reason, "workspace_no_space");
	al_result_free(res);
	al_request_free(req);
}

int main(int argc, char **argv)
{
	if (argc > 1) /* one case by name, for debugging */
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe_facts),
		cmocka_unit_test(test_bad_config_refused),
		cmocka_unit_test(test_completed_inside),
		cmocka_unit_test(test_failed_and_stdin),
		cmocka_unit_test(test_killed_by_signal),
		cmocka_unit_test(test_killed_memory_limit),
		cmocka_unit_test(test_timed_out),
		cmocka_unit_test(test_limit_reasons),
		cmocka_unit_test(test_bounded_workspace),
		cmocka_unit_test(test_interrupted),
		cmocka_unit_test(test_cancelled),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_release_refused_while_running),
		cmocka_unit_test(test_concurrent_runs_apart),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
