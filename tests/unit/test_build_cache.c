/* The build cache (src/child/build_cache.c): a packed tree comes back
 * whole with its modes, a torn or altered entry is a miss, a link in the
 * build dir makes it uncacheable, least recently used entries go first,
 * the key covers the toolchain, argv, env and sources, and the cache dir
 * must be private. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "child/build_cache.h"
#include "child/rundir.h"

static char root[64];

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/al-bc-XXXXXX");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	int fd = open("/tmp", O_RDONLY | O_DIRECTORY);
	al_remove_tree_at(fd, root + 5);
	close(fd);
	return 0;
}

static int mkdir_fd(const char *name, mode_t mode)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/%s", root, name);
	assert_int_equal(mkdir(p, mode), 0);
	chmod(p, mode);
	int fd = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	return fd;
}

static void write_at(int dirfd, const char *name, const char *text, mode_t mode)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	fchmod(fd, mode);
	close(fd);
}

static char *read_at(int dirfd, const char *name)
{
	static char buf[256];
	int fd = openat(dirfd, name, O_RDONLY);
	assert_true(fd >= 0);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	return buf;
}

static const char *key_of(char c)
{
	static char k[65];
	memset(k, c, 64);
	k[64] = '\0';
	return k;
}

static void test_round_trip(void **state)
{
	(void)state;
	int cache = mkdir_fd("cache", 0700);
	int src = mkdir_fd("src", 0755);
	int dst = mkdir_fd("dst", 0755);
	write_at(src, "main", "\x7f" "ELF fake", 0755);
	assert_int_equal(mkdirat(src, "pkg", 0755), 0);
	int pkg = openat(src, "pkg", O_RDONLY | O_DIRECTORY);
	write_at(pkg, "Main$1.class", "class bytes", 0644);
	close(pkg);

	char path[128];
	snprintf(path, sizeof(path), "%s/cache", root);
	int fd = al_build_cache_open(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(al_build_cache_get(cache, key_of('a'), dst, (uid_t)-1,
					    (gid_t)-1, 1 << 20), 0); /* miss */
	assert_int_equal(al_build_cache_put(cache, key_of('a'), src, 1 << 20), 0);
	assert_int_equal(al_build_cache_get(cache, key_of('a'), dst, (uid_t)-1,
					    (gid_t)-1, 1 << 20), 1);
	assert_string_equal(read_at(dst, "main"), "\x7f" "ELF fake");
	struct stat st;
	assert_int_equal(fstatat(dst, "main", &st, 0), 0);
	assert_int_equal(st.st_mode & 0777, 0755);
	int dpkg = openat(dst, "pkg", O_RDONLY | O_DIRECTORY);
	assert_true(dpkg >= 0);
	assert_string_equal(read_at(dpkg, "Main$1.class"), "class bytes");
	close(dpkg);

	/* an altered entry is a miss, never a partial tree */
	int e = openat(cache, key_of('a'), O_WRONLY);
	assert_true(e >= 0);
	assert_int_equal(pwrite(e, "X", 1, 30), 1);
	close(e);
	int dst2 = mkdir_fd("dst2", 0755);
	assert_int_equal(al_build_cache_get(cache, key_of('a'), dst2, (uid_t)-1,
					    (gid_t)-1, 1 << 20), 0);
	close(dst2);
	/* not a key: refused */
	assert_int_equal(al_build_cache_get(cache, "../x", dst, (uid_t)-1,
					    (gid_t)-1, 1 << 20), -EINVAL);
	close(cache);
	close(src);
	close(dst);
}

static void test_link_is_uncacheable(void **state)
{
	(void)state;
	int cache = mkdir_fd("cache", 0700);
	int src = mkdir_fd("src", 0755);
	assert_int_equal(symlinkat("/etc/shadow", src, "main"), 0);
	assert_true(al_build_cache_put(cache, key_of('b'), src, 1 << 20) < 0);
	assert_int_equal(faccessat(cache, key_of('b'), F_OK, AT_SYMLINK_NOFOLLOW), -1);
	close(cache);
	close(src);
}

static void test_lru_eviction(void **state)
{
	(void)state;
	int cache = mkdir_fd("cache", 0700);
	int src = mkdir_fd("src", 0755);
	char big[3000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	write_at(src, "main", big, 0755);
	/* each entry is a little over 3000 bytes; 8000 holds two */
	assert_int_equal(al_build_cache_put(cache, key_of('1'), src, 8000), 0);
	assert_int_equal(al_build_cache_put(cache, key_of('2'), src, 8000), 0);
	/* '1' is used after '2': '2' is the least recently used */
	struct timespec old[2] = {{1000, 0}, {1000, 0}};
	assert_int_equal(utimensat(cache, key_of('2'), old, 0), 0);
	int dst = mkdir_fd("dst", 0755);
	assert_int_equal(al_build_cache_get(cache, key_of('1'), dst, (uid_t)-1,
					    (gid_t)-1, 8000), 1);
	assert_int_equal(al_build_cache_put(cache, key_of('3'), src, 8000), 0);
	assert_int_equal(faccessat(cache, key_of('2'), F_OK, 0), -1);
	assert_int_equal(faccessat(cache, key_of('1'), F_OK, 0), 0);
	assert_int_equal(faccessat(cache, key_of('3'), F_OK, 0), 0);
	/* an entry larger than the whole bound is not kept */
	assert_int_equal(al_build_cache_put(cache, key_of('4'), src, 1000), -EFBIG);
	close(dst);
	close(cache);
	close(src);
}

static void test_key_and_dir(void **state)
{
	(void)state;
	al_toolchain tc = {.language = (char *)"c", .toolchain = (char *)"c",
			   .version = (char *)"12.2.0", .path = (char *)"/bin/sh"};
	char *argv1[] = {(char *)"/bin/sh", (char *)"-O2", NULL};
	char *argv2[] = {(char *)"/bin/sh", (char *)"-O0", NULL};
	char k1[65], k2[65], k3[65], k4[65];
	assert_int_equal(al_build_cache_key(&tc, argv1, NULL, "d1", k1), 0);
	assert_int_equal(al_build_cache_key(&tc, argv2, NULL, "d1", k2), 0);
	assert_int_equal(al_build_cache_key(&tc, argv1, NULL, "d2", k3), 0);
	tc.version = (char *)"12.3.0";
	assert_int_equal(al_build_cache_key(&tc, argv1, NULL, "d1", k4), 0);
	assert_string_not_equal(k1, k2);
	assert_string_not_equal(k1, k3);
	assert_string_not_equal(k1, k4);
	/* a group- or world-accessible dir is not trusted */
	int fd = mkdir_fd("loose", 0755);
	close(fd);
	char path[128];
	snprintf(path, sizeof(path), "%s/loose", root);
	assert_int_equal(al_build_cache_open(path), -EPERM);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_is_uncacheable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lru_eviction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_key_and_dir, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
