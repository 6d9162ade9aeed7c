/* The observation cache's key (src/sandbox/observation_cache.c): a durable run's
 * supervisor sits in a cgroup of its own ("airlock-run-<id>.<tag>"), and
 * the supervisors of one daemon share one observation; any other cgroup
 * is keyed by itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/cgroup.h"
#include "sandbox/observation_cache.h"

static char dir[] = "/tmp/al-obskey-XXXXXX";

static void make(const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(mkdir(path, 0700), 0);
}

static void unmake(const char *name)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(rmdir(path), 0);
}

/* The key with v2_base and every v1 base at dir/name.  Every directory
 * of a test is made before its keys: making one changes the parent's
 * mtime, which the key holds (a cgroup parent's does not change so). */
static void key_at(const char *name, char key[AL_SB_KEY_LEN])
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	al_sb_cgroups cg;
	memset(&cg, 0, sizeof(cg));
	cg.v2_base = path;
	for (int i = 0; i < AL_CG__N; i++)
		cg.v1_base[i] = path;
	al_sb_key_input in = {.config = "{}", .cg = &cg, .landlock_abi = 3,
			      .cap_last = 40};
	assert_int_equal(al_sb_observations_key(&in, key), 0);
}

static void test_run_cgroups_share_a_key(void **state)
{
	(void)state;
	char a[AL_SB_KEY_LEN], b[AL_SB_KEY_LEN];
	make("airlock-run-sup-0123.t1");
	make("airlock-run-4567-89ab.t1");
	key_at("airlock-run-sup-0123.t1", a);
	key_at("airlock-run-4567-89ab.t1", b);
	assert_string_equal(a, b);
	unmake("airlock-run-sup-0123.t1");
	unmake("airlock-run-4567-89ab.t1");
}

static void test_other_cgroups_keep_their_own(void **state)
{
	(void)state;
	char a[AL_SB_KEY_LEN], b[AL_SB_KEY_LEN], c[AL_SB_KEY_LEN];
	static const char *const names[] = {"service-a", "service-b",
					    "airlock-run-", "airlock-run-x.t"};
	for (size_t i = 0; i < 4; i++)
		make(names[i]);
	key_at("service-a", a);
	key_at("service-b", b);
	assert_string_not_equal(a, b);
	/* the bare prefix names no run */
	key_at("airlock-run-", c);
	assert_string_not_equal(a, c);
	key_at("airlock-run-x.t", b);
	assert_string_not_equal(b, c);
	for (size_t i = 0; i < 4; i++)
		unmake(names[i]);
}

int main(void)
{
	if (mkdtemp(dir) == NULL)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_cgroups_share_a_key),
		cmocka_unit_test(test_other_cgroups_keep_their_own),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(dir);
	return rc;
}
