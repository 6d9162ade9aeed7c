/* The local provider driven through its operations table: outcomes,
 * stdin, caps, deadline with a TERM-ignoring and a double-forked child,
 * concurrency, clean environment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <airlock/airlock.h>

#include "core/probe_scope.h"
#include "core/util.h"

static const al_provider_ops *ops;
static al_provider_handle *handle;

static int setup(void **state)
{
	(void)state;
	ops = al_provider_lookup("local");
	assert_non_null(ops);
	return ops->ensure(NULL, &handle, NULL);
}

static int teardown(void **state)
{
	(void)state;
	return ops->release(handle, NULL);
}

static al_request *make_request(const char *lang, const char *code)
{
	al_request *req = al_request_new();
	assert_non_null(req);
	req->language = strdup(lang);
	al_bytes_clear(&req->code);
	al_bytes_set(&req->code, code, strlen(code));
	req->grant.network = AL_NETWORK_HOST;
	return req;
}

static al_result *run(al_request *req, al_cancel *cancel)
{
	char id[40];
	al_run_id_new(id);
	al_cancel *own = cancel != NULL ? NULL : al_cancel_new();
	al_exec exec = {.run_id = id, .request = req,
			.cancel = cancel != NULL ? cancel : own};
	al_result *res = al_result_new();
	assert_non_null(res);
	assert_int_equal(ops->execute(handle, &exec, res, NULL), 0);
	assert_int_equal(al_result_check_shape(res), 0);
	al_cancel_free(own);
	return res;
}

static void test_completed_python(void **state)
{
	(void)state;
	al_request *req = make_request("python", "print(6*7)");
	al_result *res = run(req, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	assert_string_equal((char *)res->output[AL_STDOUT].data, "42\n");
	al_result_free(res);
	al_request_free(req);
}

static void test_failed_exit_code_and_stderr(void **state)
{
	(void)state;
	al_request *req = make_request("sh", "echo oops >&2; exit 3");
	al_result *res = run(req, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_FAILED);
	assert_int_equal(res->exit_code, 3);
	assert_string_equal((char *)res->output[AL_STDERR].data, "oops\n");
	al_result_free(res);
	al_request_free(req);
}

static void test_stdin_and_closed_stdin(void **state)
{
	(void)state;
	al_request *req = make_request("sh", "cat; echo end");
	req->has_stdin = true;
	al_bytes_clear(&req->stdin_data);
	al_bytes_set(&req->stdin_data, "hello\n", 6);
	al_result *res = run(req, NULL);
	assert_string_equal((char *)res->output[AL_STDOUT].data, "hello\nend\n");
	al_result_free(res);
	req->has_stdin = false;
	res = run(req, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	assert_string_equal((char *)res->output[AL_STDOUT].data, "end\n");
	al_result_free(res);
	al_request_free(req);
}

/* A live stdin stream (al_exec's stdin_fd) replaces the request's stdin;
 * an al_exec from a host built before the members carries none. */
static void test_stdin_stream(void **state)
{
	(void)state;
	al_request *req = make_request("sh", "cat; echo end");
	req->has_stdin = true;
	al_bytes_clear(&req->stdin_data);
	al_bytes_set(&req->stdin_data, "ignored\n", 8);
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "live\n", 5), 5);
	close(p[1]);
	char id[40];
	al_run_id_new(id);
	al_cancel *cancel = al_cancel_new();
	al_exec exec = {AL_ABI_HEADER(al_exec),
			.run_id = id,
			.request = req,
			.cancel = cancel,
			.stdin_stream = true,
			.stdin_fd = p[0]};
	assert_int_equal(al_exec_stdin_fd(&exec), p[0]);
	al_result *res = al_result_new();
	assert_non_null(res);
	assert_int_equal(ops->execute(handle, &exec, res, NULL), 0);
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	assert_string_equal((char *)res->output[AL_STDOUT].data, "live\nend\n");
	al_result_free(res);
	close(p[0]);
	exec.struct_size = (uint32_t)offsetof(al_exec, stdin_stream);
	assert_int_equal(al_exec_stdin_fd(&exec), -1);
	exec.struct_size = sizeof(al_exec);
	exec.stdin_stream = false;
	assert_int_equal(al_exec_stdin_fd(&exec), -1);
	al_cancel_free(cancel);
	al_request_free(req);
}

static void test_output_cap_does_not_block(void **state)
{
	(void)state;
	al_request *req = make_request("sh", "head -c 1000000 /dev/zero; echo done >&2");
	req->limits.output_bytes = 1000;
	req->limits.set |= AL_LIMIT_OUTPUT_BYTES;
	al_result *res = run(req, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	assert_int_equal(res->output[AL_STDOUT].len, 1000);
	assert_true(res->truncated[AL_STDOUT]);
	assert_int_equal(res->output_seen[AL_STDOUT], 1000000);
	assert_string_equal((char *)res->output[AL_STDERR].data, "done\n");
	al_result_free(res);
	al_request_free(req);
}

static int pid_alive(pid_t pid)
{
	return kill(pid, 0) == 0;
}

static void test_timeout_kills_term_ignoring_tree(void **state)
{
	(void)state;
	char code[512];
	snprintf(code, sizeof(code),
		 "trap '' TERM; (trap '' TERM; setsid sh -c 'echo $$ > /tmp/t/grandchild.%d; sleep 30' &) ; sleep 30",
		 (int)getpid());
	al_request *req = make_request("sh", code);
	req->limits.wall_ms = 300;
	req->limits.set |= AL_LIMIT_WALL_MS;
	al_result *res = run(req, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_TIMED_OUT);
	assert_false(res->has_exit_code);
	char path[64];
	snprintf(path, sizeof(path), "/tmp/t/grandchild.%d", (int)getpid());
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	int pid = 0;
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	fclose(f);
	unlink(path);
	assert_false(pid_alive(pid));
	al_result_free(res);
	al_request_free(req);
}

static void test_nothing_outlives_program(void **state)
{
	(void)state;
	char code[512];
	snprintf(code, sizeof(code),
		 "(setsid sh -c 'echo $$ > /tmp/t/orphan.%d; exec sleep 30' &); sleep 0.2; exit 0",
		 (int)getpid());
	al_request *req = make_request("sh", code);
	al_result *res = run(req, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	char path[64];
	snprintf(path, sizeof(path), "/tmp/t/orphan.%d", (int)getpid());
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	int pid = 0;
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	fclose(f);
	unlink(path);
	assert_false(pid_alive(pid));
	al_result_free(res);
	al_request_free(req);
}

static void test_killed_by_signal_and_rlimits(void **state)
{
	(void)state;
	al_request *req = make_request("sh", "kill -SEGV $$");
	al_result *res = run(req, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_KILLED);
	assert_int_equal(res->signal, SIGSEGV);
	al_result_free(res);
	al_request_free(req);

	req = make_request("sh", "head -c 100000 /dev/zero > big");
	req->limits.file_bytes = 1000;
	req->limits.set |= AL_LIMIT_FILE_BYTES;
	res = run(req, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_FAILED);
	al_result_free(res);
	al_request_free(req);

	/* Python ignores SIGXFSZ and raises EFBIG instead: a clean failure. */
	req = make_request("python", "f=open('big','wb')\nf.write(b'x'*100000)\nf.close()\n");
	req->limits.file_bytes = 1000;
	req->limits.set |= AL_LIMIT_FILE_BYTES;
	res = run(req, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_FAILED);
	assert_non_null(strstr((char *)res->output[AL_STDERR].data, "File too large"));
	al_result_free(res);
	al_request_free(req);

	req = make_request("sh", "exec head -c 100000 /dev/zero > big");
	req->limits.file_bytes = 1000;
	req->limits.set |= AL_LIMIT_FILE_BYTES;
	res = run(req, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_KILLED);
	assert_string_equal(res->reason, "file_size_limit");
	al_result_free(res);
	al_request_free(req);

	req = make_request("sh", "while :; do :; done");
	req->limits.cpu_ms = 500;
	req->limits.set |= AL_LIMIT_CPU_MS;
	res = run(req, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_KILLED);
	assert_string_equal(res->reason, "cpu_limit");
	al_result_free(res);
	al_request_free(req);
}

static void test_refusals(void **state)
{
	(void)state;
	al_request *req = make_request("cobol", "x");
	al_result *res = run(req, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_UNSUPPORTED_LANGUAGE);
	al_result_free(res);
	al_request_free(req);

	req = make_request("sh", "true");
	req->limits.memory_bytes = 1 << 20;
	req->limits.set |= AL_LIMIT_MEMORY_BYTES;
	res = run(req, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_UNENFORCEABLE_LIMIT);
	assert_string_equal(res->reason, "memory_bytes");
	al_result_free(res);
	al_request_free(req);

	req = make_request("sh", "true");
	req->grant.network = AL_NETWORK_NONE;
	res = run(req, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_UNENFORCEABLE_LIMIT);
	assert_string_equal(res->reason, "network");
	al_result_free(res);
	al_request_free(req);
}

static void test_clean_environment(void **state)
{
	(void)state;
	setenv("AIRLOCK_TEST_HOST_SECRET", "leak", 1);
	al_request *req = make_request("sh", "env | sort");
	req->env = calloc(1, sizeof(*req->env));
	req->env[0].name = strdup("MODE");
	req->env[0].value = strdup("fast");
	req->n_env = 1;
	al_result *res = run(req, NULL);
	const char *out = (char *)res->output[AL_STDOUT].data;
	assert_null(strstr(out, "AIRLOCK_TEST_HOST_SECRET"));
	assert_non_null(strstr(out, "MODE=fast"));
	assert_non_null(strstr(out, "AIRLOCK_RUN_ID="));
	assert_non_null(strstr(out, "AIRLOCK_RUN_TEMP="));
	al_result_free(res);
	al_request_free(req);
}

static void *cancel_later(void *arg)
{
	usleep(200000);
	al_cancel_fire(arg, AL_CANCEL_CANCELLED);
	return NULL;
}

static void test_cancel(void **state)
{
	(void)state;
	al_cancel *c = al_cancel_new();
	pthread_t t;
	pthread_create(&t, NULL, cancel_later, c);
	al_request *req = make_request("sh", "sleep 30");
	al_result *res = run(req, c);
	pthread_join(t, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_CANCELLED);
	assert_true(res->usage.wall_ms < 5000);
	al_result_free(res);
	al_request_free(req);
	al_cancel_free(c);
}

typedef struct conc {
	al_request *req;
	al_result *res;
} conc;

static void *conc_run(void *arg)
{
	conc *c = arg;
	char id[40];
	al_run_id_new(id);
	al_cancel *cancel = al_cancel_new();
	al_exec exec = {.run_id = id, .request = c->req, .cancel = cancel};
	c->res = al_result_new();
	ops->execute(handle, &exec, c->res, NULL);
	al_cancel_free(cancel);
	return NULL;
}

static void test_concurrent_private_temp(void **state)
{
	(void)state;
	enum { N = 8 };
	conc cs[N];
	pthread_t th[N];
	al_request *req = make_request("sh",
		"ls -A \"$AIRLOCK_RUN_TEMP\" | wc -l; echo x > \"$AIRLOCK_RUN_TEMP/f\"; sleep 0.2; echo \"$AIRLOCK_RUN_TEMP\"");
	for (int i = 0; i < N; i++) {
		cs[i].req = req;
		pthread_create(&th[i], NULL, conc_run, &cs[i]);
	}
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < N; i++) {
		assert_int_equal(cs[i].res->outcome, AL_OUTCOME_COMPLETED);
		const char *out = (char *)cs[i].res->output[AL_STDOUT].data;
		assert_true(strncmp(out, "0\n", 2) == 0);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(out, (char *)cs[j].res->output[AL_STDOUT].data);
	}
	for (int i = 0; i < N; i++)
		al_result_free(cs[i].res);
	al_request_free(req);
}

/* A probe that judges one request (the host's scope) looks at that
 * language alone; an unknown one, or none, at every language. */
static void test_scoped_probe(void **state)
{
	(void)state;
	al_facts *whole = NULL, *one = NULL, *unknown = NULL;
	assert_int_equal(ops->probe(NULL, &whole, NULL), 0);
	if (al_facts_find_language(whole, "sh") == NULL ||
	    whole->n_languages < 2) {
		print_message("skip: no sh and second language here\n");
		al_facts_free(whole);
		return;
	}
	al_probe_scope_set("sh");
	assert_int_equal(ops->probe(NULL, &one, NULL), 0);
	al_probe_scope_set("no-such-language");
	assert_int_equal(ops->probe(NULL, &unknown, NULL), 0);
	al_probe_scope_set(NULL);
	assert_int_equal(one->n_languages, 1);
	assert_string_equal(one->languages[0].language, "sh");
	assert_int_equal(one->limits, whole->limits);
	assert_int_equal(unknown->n_languages, whole->n_languages);
	al_facts_free(whole);
	al_facts_free(one);
	al_facts_free(unknown);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_completed_python),
		cmocka_unit_test(test_failed_exit_code_and_stderr),
		cmocka_unit_test(test_stdin_and_closed_stdin),
		cmocka_unit_test(test_stdin_stream),
		cmocka_unit_test(test_output_cap_does_not_block),
		cmocka_unit_test(test_timeout_kills_term_ignoring_tree),
		cmocka_unit_test(test_nothing_outlives_program),
		cmocka_unit_test(test_killed_by_signal_and_rlimits),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_clean_environment),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_concurrent_private_temp),
		cmocka_unit_test(test_scoped_probe),
	};
	mkdir("/tmp/t", 0700);
	return cmocka_run_group_tests(tests, setup, teardown);
}
