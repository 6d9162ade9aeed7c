/* Network namespaces made ahead of cold runs (src/sandbox/netns_ahead.h):
 * each is fresh and serves one run, making one never moves a thread of
 * ours out of its namespace nor leaves a thread behind, and cold runs of
 * a root handle join them with the network they were granted; where the
 * sandbox does not launch as root, nothing is made ahead.  Skips, saying
 * why, only where the sandbox's facts say it cannot run sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <airlock/airlock.h>

#include "sandbox/netns_ahead.h"
#include "sandbox/sandbox.h"
#include "unit_support.h"

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

/* The probed facts: a sandbox that runs sh, and whether it launches as
 * root (per-run uids), the only case that makes namespaces ahead. */
static bool sandbox_runs_sh(void)
{
	if (!facts->available || al_facts_find_language(facts, "sh") == NULL) {
		print_message("skip: the sandbox facts say it is unavailable "
			      "or has no sh\n");
		return false;
	}
	return true;
}

static bool launches_as_root(void)
{
	return facts->mechanism_json != NULL &&
	       strstr(facts->mechanism_json,
		      "\"uid_mode\":\"per_run_pool\"") != NULL;
}

static ino_t ns_ino(int fd)
{
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	return st.st_ino;
}

static ino_t own_ns(void)
{
	int fd = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	ino_t i = ns_ino(fd);
	close(fd);
	return i;
}

static void test_each_is_fresh_and_ours_untouched(void **state)
{
	(void)state;
	ino_t mine = own_ns();
	unsigned before = ut_threads();
	al_sb_netns_ahead a;
	al_sb_netns_ahead_init(&a, true);
	if (geteuid() != 0) {
		/* unsharing a network namespace needs CAP_SYS_ADMIN: none
		 * is made, and nothing of ours is left or moved */
		al_sb_netns_ahead_settle(&a);
		assert_int_equal(al_sb_netns_ahead_take(&a), -1);
		al_sb_netns_ahead_clear(&a);
		assert_int_equal(ut_threads_back_to(before), before);
		assert_int_equal(own_ns(), mine);
		return;
	}
	/* nothing made yet */
	assert_int_equal(al_sb_netns_ahead_take(&a), -1);
	ino_t seen[3];
	for (int i = 0; i < 3; i++) {
		al_sb_netns_ahead_settle(&a);
		assert_int_equal(ut_threads_back_to(before), before);
		int fd = al_sb_netns_ahead_take(&a);
		assert_true(fd >= 0);
		assert_int_equal(ioctl(fd, NS_GET_NSTYPE), CLONE_NEWNET);
		seen[i] = ns_ino(fd);
		assert_true(seen[i] != mine);
		for (int j = 0; j < i; j++)
			assert_true(seen[j] != seen[i]);
		close(fd);
		/* taken: none until the next is made */
		assert_int_equal(al_sb_netns_ahead_take(&a), -1);
	}
	al_sb_netns_ahead_refill(&a);
	al_sb_netns_ahead_clear(&a);
	assert_int_equal(ut_threads_back_to(before), before);
	assert_int_equal(own_ns(), mine);

	/* disabled: nothing is ever made */
	al_sb_netns_ahead_init(&a, false);
	al_sb_netns_ahead_settle(&a);
	assert_int_equal(al_sb_netns_ahead_take(&a), -1);
	al_sb_netns_ahead_clear(&a);
}

/* "net:[inode] N" from inside a run granted `network`: N is 1 when lo
 * is up (it has ::1 then), 0 when it is down. */
static void run_net(al_provider_handle *h, const char *network, char *out,
		    size_t size)
{
	char text[512];
	snprintf(text, sizeof(text),
		 "{\"language\": \"sh\", \"code\": \"n=$(readlink "
		 "/proc/self/ns/net); f=$(grep -c ' lo$' /proc/net/if_inet6); "
		 "echo \\\"$n $f\\\"\", "
		 "\"grant\": {\"network\": \"%s\"}}",
		 network);
	al_request *req = NULL;
	assert_int_equal(al_request_from_json(text, strlen(text), &req, NULL),
			 0);
	al_cancel *cancel = al_cancel_new();
	al_exec exec = {.run_id = "netns-ahead", .request = req,
			.cancel = cancel};
	al_result *res = al_result_new();
	assert_int_equal(ops->execute(h, &exec, res, NULL), 0);
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	snprintf(out, size, "%s",
		 res->output[AL_STDOUT].data ? (char *)res->output[AL_STDOUT].data
					     : "");
	al_result_free(res);
	al_cancel_free(cancel);
	al_request_free(req);
}

static void test_cold_runs_join_them(void **state)
{
	(void)state;
	if (!sandbox_runs_sh())
		return;
	bool root = launches_as_root();
	al_provider_handle *h = NULL;
	assert_int_equal(ops->ensure(NULL, &h, NULL), 0);
	char a[128], b[128], c[128], host[64];
	snprintf(host, sizeof(host), "net:[%lu]\n", (unsigned long)own_ns());
	run_net(h, "loopback", a, sizeof(a)); /* none ready yet: its own */
	/* made after the first run; wait for it as a supervisor does */
	al_sandbox_pool_renew(h, 10000);
	run_net(h, "loopback", b, sizeof(b));
	al_sandbox_pool_renew(h, 10000);
	run_net(h, "none", c, sizeof(c));
	unsigned long long taken = 0, missed = 0;
	al_sb_provider_netns_stats(h, &taken, &missed);
	/* unprivileged, none is made ahead and none is counted */
	assert_int_equal(missed, root ? 1 : 0);
	assert_int_equal(taken, root ? 2 : 0);
	/* each run in a namespace of its own, never the host's */
	assert_true(strncmp(a, "net:[", 5) == 0);
	assert_true(strcmp(a, b) != 0 && strcmp(b, c) != 0 &&
		    strcmp(a, c) != 0);
	assert_null(strstr(a, host));
	assert_null(strstr(b, host));
	assert_null(strstr(c, host));
	/* loopback up where granted, down where not */
	const char *fb = strchr(b, ' '), *fc = strchr(c, ' ');
	assert_non_null(fb);
	assert_non_null(fc);
	assert_string_equal(fb, " 1\n");
	assert_string_equal(fc, " 0\n");
	assert_int_equal(ops->release(h, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_is_fresh_and_ours_untouched),
		cmocka_unit_test(test_cold_runs_join_them),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
