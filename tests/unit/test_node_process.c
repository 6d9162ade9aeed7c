/* A fleet node's published process and the liveness check of a node
 * whose lease ran out (src/server/node_process.h): alive only when the
 * very process is seen — same boot, same pid namespace, same pid and
 * start time, not a zombie. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/node_process.h"

#define BOOT "0f1e2d3c-aaaa-bbbb-cccc-000011112222"

/* This process's facts, as a node publishes them (JSON text). */
static char *own_facts(const char *boot)
{
	json_t *o = json_object();
	assert_non_null(o);
	assert_int_equal(al_node_process_publish(o, boot), 0);
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	assert_non_null(text);
	return text;
}

/* facts with process.<key> set to v. */
static char *with_field(const char *facts, const char *key, json_t *v)
{
	json_t *o = json_loads(facts, 0, NULL);
	assert_non_null(o);
	assert_int_equal(json_object_set_new(json_object_get(o, "process"),
					     key, v),
			 0);
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	assert_non_null(text);
	return text;
}

static void test_self_is_alive(void **state)
{
	(void)state;
	char *facts = own_facts(BOOT);
	json_t *o = json_loads(facts, 0, NULL);
	json_t *p = json_object_get(o, "process");
	assert_string_equal(json_string_value(json_object_get(p, "boot_id")),
			    BOOT);
	assert_int_equal(json_integer_value(json_object_get(p, "pid")),
			 getpid());
	assert_true(json_integer_value(json_object_get(p, "start")) > 0);
	assert_true(json_integer_value(json_object_get(p, "pid_ns")) > 0);
	json_decref(o);
	assert_true(al_node_process_alive(facts, BOOT));
	/* Another boot of the host: the pid names nothing it knows. */
	assert_false(al_node_process_alive(facts, "another-boot"));
	assert_false(al_node_process_alive(facts, ""));
	free(facts);
}

static void test_other_start_or_namespace(void **state)
{
	(void)state;
	char *facts = own_facts(BOOT);
	json_t *o = json_loads(facts, 0, NULL);
	json_int_t start = json_integer_value(
		json_object_get(json_object_get(o, "process"), "start"));
	json_decref(o);
	/* A recycled pid: another start time. */
	char *recycled = with_field(facts, "start", json_integer(start + 1));
	assert_false(al_node_process_alive(recycled, BOOT));
	/* Another pid namespace: the pid names another process. */
	char *elsewhere = with_field(facts, "pid_ns", json_integer(1));
	assert_false(al_node_process_alive(elsewhere, BOOT));
	char *no_pid = with_field(facts, "pid", json_integer(-1));
	assert_false(al_node_process_alive(no_pid, BOOT));
	char *big_pid = with_field(facts, "pid", json_integer(INT64_MAX));
	assert_false(al_node_process_alive(big_pid, BOOT));
	char *text_pid = with_field(facts, "pid", json_string("1"));
	assert_false(al_node_process_alive(text_pid, BOOT));
	free(recycled);
	free(elsewhere);
	free(no_pid);
	free(big_pid);
	free(text_pid);
	free(facts);
}

/* Facts naming a child of this process, forked and stopped at exit. */
static char *child_facts(pid_t *child)
{
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		char *facts = own_facts(BOOT);
		size_t len = strlen(facts);
		if (write(ready[1], facts, len) != (ssize_t)len)
			_exit(1);
		close(ready[1]);
		pause();
		_exit(0);
	}
	close(ready[1]);
	char buf[1024];
	size_t got = 0;
	ssize_t n;
	while ((n = read(ready[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	close(ready[0]);
	buf[got] = '\0';
	*child = pid;
	return strdup(buf);
}

static void test_gone_and_zombie(void **state)
{
	(void)state;
	pid_t child;
	char *facts = child_facts(&child);
	assert_non_null(facts);
	assert_true(al_node_process_alive(facts, BOOT));
	/* Stopped is alive: slow, not dead. */
	assert_int_equal(kill(child, SIGSTOP), 0);
	int status;
	assert_int_equal(waitpid(child, &status, WUNTRACED), child);
	assert_true(al_node_process_alive(facts, BOOT));
	/* Killed and not yet reaped: a zombie is dead. */
	assert_int_equal(kill(child, SIGKILL), 0);
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	assert_int_equal(waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT),
			 0);
	assert_false(al_node_process_alive(facts, BOOT));
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_false(al_node_process_alive(facts, BOOT));
	free(facts);
}

static void test_malformed(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"", "{", "[]", "{}", "{\"process\": 1}",
		"{\"process\": {\"boot_id\": \"" BOOT "\"}}",
		"{\"process\": {\"boot_id\": 7, \"pid\": 1, \"start\": 1, "
		"\"pid_ns\": 1}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(al_node_process_alive(bad[i], BOOT));
	assert_false(al_node_process_alive(NULL, BOOT));
	/* Nothing is published without a boot id. */
	json_t *o = json_object();
	assert_int_equal(al_node_process_publish(o, ""), 0);
	assert_int_equal(json_object_size(o), 0);
	json_decref(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_is_alive),
		cmocka_unit_test(test_other_start_or_namespace),
		cmocka_unit_test(test_gone_and_zombie),
		cmocka_unit_test(test_malformed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
