/* The compiled seccomp filter and its disk cache: a cached filter is the
 * compiled one byte for byte and still refuses what the policy refuses;
 * a file that does not verify (another key, a flipped byte, a short file,
 * a mode others can write) is never used, and the next compile replaces
 * it with a good one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/filter_cache.h"
#include "sandbox/seccomp_policy.h"

static char dir[64];
static char key[AL_SB_FILTER_KEY_LEN];
static char path[128];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/al-filter-XXXXXX");
	if (mkdtemp(dir) == NULL || setenv("AIRLOCK_CACHE_DIR", dir, 1) < 0 ||
	    al_sb_filter_key(key) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/seccomp-%.16s.bpf", dir, key);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	al_sb_filter_reset();
	unlink(path);
	return rmdir(dir);
}

static bool same(const al_sb_filter *a, const al_sb_filter *b)
{
	return a->len == b->len && a->len > 0 &&
	       memcmp(a->insns, b->insns, a->len * sizeof(*a->insns)) == 0;
}

/* Loads f in a child and tries unshare (root could, the filter must not
 * let it): the child's exit says what happened. */
static int refused_in_child(const al_sb_filter *f)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    al_sb_filter_load(f) < 0)
			_exit(2);
		_exit(syscall(SYS_unshare, CLONE_NEWUTS) < 0 && errno == EPERM
			      ? 0
			      : 1);
	}
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static void test_cached_is_compiled(void **state)
{
	(void)state;
	al_sb_filter fresh, first, again, loaded;
	al_sb_filter_reset();
	unlink(path);
	assert_int_equal(al_sb_filter_compile_now(&fresh, NULL), 0);
	/* a miss compiles and stores */
	assert_int_equal(al_sb_filter_compile(&first, NULL), 0);
	assert_true(same(&fresh, &first));
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* a new process (no copy in memory) reads the file */
	al_sb_filter_reset();
	assert_int_equal(al_sb_filter_cache_load(dir, key, &loaded), 0);
	assert_true(same(&fresh, &loaded));
	assert_int_equal(al_sb_filter_compile(&again, NULL), 0);
	assert_true(same(&fresh, &again));
	assert_int_equal(refused_in_child(&again), 0);
	al_sb_filter_clear(&fresh);
	al_sb_filter_clear(&first);
	al_sb_filter_clear(&again);
	al_sb_filter_clear(&loaded);
}

static void flip_byte(off_t at)
{
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	unsigned char c;
	assert_int_equal(pread(fd, &c, 1, at), 1);
	c ^= 0x01;
	assert_int_equal(pwrite(fd, &c, 1, at), 1);
	close(fd);
}

static void test_unverified_never_used(void **state)
{
	(void)state;
	al_sb_filter good, f;
	al_sb_filter_reset();
	assert_int_equal(al_sb_filter_compile(&good, NULL), 0);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);

	/* another key */
	char other[AL_SB_FILTER_KEY_LEN];
	memcpy(other, key, sizeof(other));
	other[63] = other[63] == '0' ? '1' : '0';
	assert_int_equal(al_sb_filter_cache_load(dir, other, &f), -ENOENT);

	/* a flipped byte in the last instruction (a RET's value) */
	flip_byte(st.st_size - 4);
	assert_int_equal(al_sb_filter_cache_load(dir, key, &f), -ENOENT);
	assert_null(f.insns);
	/* the compile that follows replaces it with a verified one */
	al_sb_filter_reset();
	assert_int_equal(al_sb_filter_compile(&f, NULL), 0);
	assert_true(same(&good, &f));
	al_sb_filter_clear(&f);
	assert_int_equal(al_sb_filter_cache_load(dir, key, &f), 0);
	assert_true(same(&good, &f));
	al_sb_filter_clear(&f);

	/* a short file */
	assert_int_equal(truncate(path, st.st_size - 8), 0);
	assert_int_equal(al_sb_filter_cache_load(dir, key, &f), -ENOENT);
	unlink(path);
	al_sb_filter_reset();
	assert_int_equal(al_sb_filter_compile(&f, NULL), 0);
	al_sb_filter_clear(&f);

	/* a file others could have written */
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(al_sb_filter_cache_load(dir, key, &f), -ENOENT);
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(al_sb_filter_cache_load(dir, key, &f), 0);
	al_sb_filter_clear(&f);

	/* a directory others can write is not trusted either */
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(al_sb_filter_cache_load(dir, key, &f), -ENOENT);
	assert_int_equal(chmod(dir, 0700), 0);
	al_sb_filter_clear(&good);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cached_is_compiled),
		cmocka_unit_test(test_unverified_never_used),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
