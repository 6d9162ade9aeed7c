/* Declared outputs, the artifact store and run-directory removal, on
 * trees a hostile program could have left: only regular files with one
 * link, reached without a link, that stayed the same file while read,
 * are copied (0600, exact bytes and SHA-256); links, hardlinks, FIFOs
 * (without blocking), devices, sockets, directories and swapped files are
 * refused by name; removal never follows a link and works at any depth;
 * retention removes only expired, unlocked stores. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <airlock/airlock.h>

#include "bundle/beneath.h"
#include "core/util.h"
#include "child/artifacts.h"
#include "child/outputs.h"
#include "child/rundir.h"

typedef struct fixture {
	char *dir;
	int ws, store;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	char tmpl[] = "/tmp/al-outputs-XXXXXX";
	if (f == NULL || mkdtemp(tmpl) == NULL)
		return -1;
	f->dir = strdup(tmpl);
	char *ws = al_strdup_printf("%s/ws", f->dir);
	char *st = al_strdup_printf("%s/store", f->dir);
	mkdir(ws, 0700);
	mkdir(st, 0700);
	f->ws = open(ws, O_PATH | O_DIRECTORY);
	f->store = open(st, O_RDONLY | O_DIRECTORY);
	free(ws);
	free(st);
	*state = f;
	return f->ws >= 0 && f->store >= 0 ? 0 : -1;
}

static int teardown(void **state)
{
	fixture *f = *state;
	close(f->ws);
	close(f->store);
	int rc = al_remove_tree_at(AT_FDCWD, f->dir);
	free(f->dir);
	free(f);
	return rc;
}

static void put(int dirfd, const char *rel, const char *text)
{
	int fd = openat(dirfd, rel, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	size_t n = strlen(text);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	close(fd);
}

static al_result *collect(fixture *f, char **patterns, size_t n,
			  uint64_t max_bytes)
{
	al_result *res = al_result_new();
	assert_non_null(res);
	al_outputs_spec s = {.ws_dirfd = f->ws, .store_dirfd = f->store,
			     .patterns = patterns, .n_patterns = n,
			     .max_bytes = max_bytes};
	assert_int_equal(al_outputs_collect(&s, res), 0);
	return res;
}

static const al_output_file *find(const al_result *res, const char *path)
{
	for (size_t i = 0; i < res->n_outputs; i++)
		if (strcmp(res->outputs[i].path, path) == 0)
			return &res->outputs[i];
	fail_msg("no output entry for %s", path);
	return NULL;
}

static void expect_refused(const al_result *res, const char *path,
			   const char *why)
{
	const al_output_file *o = find(res, path);
	assert_non_null(o->refused_reason);
	assert_string_equal(o->refused_reason, why);
	assert_null(o->artifact);
	assert_int_equal(o->sha256[0], '\0');
}

static void expect_stored(fixture *f, const al_output_file *o,
			  const char *text)
{
	assert_null(o->refused_reason);
	assert_non_null(o->artifact);
	assert_int_equal(o->size, strlen(text));
	char hex[65];
	al_sha256_hex(text, strlen(text), hex);
	assert_string_equal(o->sha256, hex);
	struct stat st;
	assert_int_equal(fstatat(f->store, o->artifact, &st,
				 AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	int fd = openat(f->store, o->artifact, O_RDONLY);
	char buf[256];
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	assert_int_equal(n, (ssize_t)strlen(text));
	assert_memory_equal(buf, text, (size_t)n);
}

static size_t store_count(fixture *f)
{
	int fd = openat(f->store, ".", O_RDONLY | O_DIRECTORY);
	DIR *d = fdopendir(fd);
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void test_regular_files_and_globs(void **state)
{
	fixture *f = *state;
	assert_int_equal(mkdirat(f->ws, "out", 0755), 0);
	put(f->ws, "out/report.json", "{\"rows\": 2}\n");
	put(f->ws, "out/b.json", "b");
	put(f->ws, "out/a.json", "a");
	put(f->ws, "out/.hidden.json", "h");
	put(f->ws, "out/notes.txt", "n");
	char *pats[] = {"out/report.json", "out/*.json", "*.csv", "nope.txt"};
	al_result *res = collect(f, pats, 4, 0);
	/* the literal first, then the matches in order, each once */
	assert_int_equal(res->n_outputs, 5);
	assert_string_equal(res->outputs[0].path, "out/report.json");
	assert_string_equal(res->outputs[1].path, "out/a.json");
	assert_string_equal(res->outputs[2].path, "out/b.json");
	expect_stored(f, &res->outputs[0], "{\"rows\": 2}\n");
	expect_stored(f, &res->outputs[1], "a");
	expect_stored(f, &res->outputs[2], "b");
	assert_string_equal(res->outputs[0].artifact, "out-1");
	/* `*` does not match a leading dot */
	expect_refused(res, "*.csv", "no_match");
	expect_refused(res, "nope.txt", "missing");
	assert_int_equal(store_count(f), 3);
	al_result_free(res);
}

static void test_hostile_entries_refused(void **state)
{
	fixture *f = *state;
	char *outside = al_strdup_printf("%s/outside", f->dir);
	int fd = open(outside, O_WRONLY | O_CREAT, 0644);
	assert_int_equal(write(fd, "HOST", 4), 4);
	close(fd);
	assert_int_equal(symlinkat("/etc/passwd", f->ws, "passwd.txt"), 0);
	assert_int_equal(symlinkat(outside, f->ws, "link.txt"), 0);
	assert_int_equal(linkat(AT_FDCWD, outside, f->ws, "hard.txt", 0), 0);
	assert_int_equal(mkfifoat(f->ws, "fifo.txt", 0644), 0);
	assert_int_equal(mkdirat(f->ws, "dir.txt", 0755), 0);
	/* a directory link on the way */
	assert_int_equal(symlinkat(f->dir, f->ws, "up"), 0);
	/* a unix socket */
	int sfd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char *sp = al_strdup_printf("%s/ws/sock.txt", f->dir);
	assert_true(strlen(sp) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, sp, strlen(sp) + 1);
	assert_int_equal(bind(sfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	/* a device node, where this process may make one */
	bool dev = mknodat(f->ws, "null.txt", S_IFCHR | 0666, makedev(1, 3)) == 0;
	if (!dev)
		print_message("device case not tried: mknod refused here (%s)\n",
			      strerror(errno));
	put(f->ws, "ok.txt", "fine");

	char *pats[] = {"*.txt", "up/outside", "passwd.txt"};
	al_result *res = collect(f, pats, 3, 0);
	expect_refused(res, "passwd.txt", "symlink");
	expect_refused(res, "link.txt", "symlink");
	expect_refused(res, "hard.txt", "hardlink");
	expect_refused(res, "fifo.txt", "fifo");
	expect_refused(res, "dir.txt", "directory");
	expect_refused(res, "sock.txt", "socket");
	expect_refused(res, "up/outside", "symlink");
	if (dev)
		expect_refused(res, "null.txt", "device");
	expect_stored(f, find(res, "ok.txt"), "fine");
	/* nothing of the host was copied */
	assert_int_equal(store_count(f), 1);
	al_result_free(res);
	close(sfd);
	free(sp);
	free(outside);
}

/* The byte bound: a file larger than what is left is too_large. */
/* The same refusals where openat2 is missing (the segment walk). */
static void test_hostile_entries_refused_by_walk(void **state)
{
	al_beneath_force_walk(true);
	test_hostile_entries_refused(state);
	al_beneath_force_walk(false);
}

static void test_byte_bound(void **state)
{
	fixture *f = *state;
	assert_int_equal(mkdirat(f->ws, "many", 0755), 0);
	for (int i = 0; i < 20; i++) {
		char name[32];
		snprintf(name, sizeof(name), "many/f%02d", i);
		put(f->ws, name, "x");
	}
	put(f->ws, "big", "0123456789");
	char *pats[] = {"big", "many/*"};
	/* 10 bytes do not fit in 8; then 8 one-byte files do */
	al_result *res = collect(f, pats, 2, 8);
	expect_refused(res, "big", "too_large");
	size_t stored = 0, too_large = 0;
	for (size_t i = 0; i < res->n_outputs; i++) {
		stored += res->outputs[i].artifact != NULL;
		too_large += res->outputs[i].refused_reason &&
			     strcmp(res->outputs[i].refused_reason,
				    "too_large") == 0;
	}
	assert_int_equal(stored, 8);
	assert_int_equal(too_large, 1 + 12);
	expect_stored(f, find(res, "many/f00"), "x");
	expect_refused(res, "many/f19", "too_large");
	assert_int_equal(store_count(f), 8);
	al_result_free(res);
}

static void test_file_limit_and_no_store(void **state)
{
	fixture *f = *state;
	assert_int_equal(mkdirat(f->ws, "many", 0755), 0);
	for (int i = 0; i < 70; i++) {
		char name[32];
		snprintf(name, sizeof(name), "many/f%02d", i);
		put(f->ws, name, "x");
	}
	char *pats[] = {"many/*", "a/*/*/*/*/*/*/*/*/*"};
	al_result *res = collect(f, pats, 2, 0);
	size_t stored = 0, too_many = 0;
	for (size_t i = 0; i < res->n_outputs; i++) {
		stored += res->outputs[i].artifact != NULL;
		too_many += res->outputs[i].refused_reason &&
			    strcmp(res->outputs[i].refused_reason,
				   "too_many_files") == 0;
	}
	assert_int_equal(stored, AL_OUTPUTS_MAX_FILES);
	assert_int_equal(too_many, 70 - AL_OUTPUTS_MAX_FILES);
	expect_refused(res, "a/*/*/*/*/*/*/*/*/*", "pattern_too_deep");
	assert_int_equal(store_count(f), AL_OUTPUTS_MAX_FILES);
	al_result_free(res);

	/* without a store nothing is read */
	al_result *r2 = al_result_new();
	char *one[] = {"many/f00"};
	al_outputs_spec s = {.ws_dirfd = f->ws, .store_dirfd = -1,
			     .patterns = one, .n_patterns = 1};
	assert_int_equal(al_outputs_collect(&s, r2), 0);
	expect_refused(r2, "many/f00", "no_store");
	al_result_free(r2);
}

/* Swapped for a link while it was read: refused, nothing kept. */
typedef struct swap_ctx {
	int ws;
	int calls;
} swap_ctx;

static void swap_for_link(void *ctx, const char *path)
{
	swap_ctx *s = ctx;
	s->calls++;
	assert_int_equal(symlinkat("/etc/passwd", s->ws, "tmp-link"), 0);
	assert_int_equal(renameat(s->ws, "tmp-link", s->ws, path), 0);
}

static void grow(void *ctx, const char *path)
{
	swap_ctx *s = ctx;
	s->calls++;
	int fd = openat(s->ws, path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "more", 4), 4);
	close(fd);
}

static void test_swapped_during_collection(void **state)
{
	fixture *f = *state;
	int ws_rw = openat(f->ws, ".", O_RDONLY | O_DIRECTORY);
	put(ws_rw, "out.txt", "x");
	swap_ctx sc = {.ws = ws_rw};
	char *pats[] = {"out.txt"};
	al_result *res = al_result_new();
	al_outputs_spec s = {.ws_dirfd = f->ws, .store_dirfd = f->store,
			     .patterns = pats, .n_patterns = 1,
			     .after_read = swap_for_link, .after_read_ctx = &sc};
	assert_int_equal(al_outputs_collect(&s, res), 0);
	assert_int_equal(sc.calls, 1);
	expect_refused(res, "out.txt", "changed");
	assert_int_equal(store_count(f), 0);
	al_result_free(res);

	assert_int_equal(unlinkat(ws_rw, "out.txt", 0), 0);
	put(ws_rw, "out.txt", "x");
	res = al_result_new();
	s.after_read = grow;
	assert_int_equal(al_outputs_collect(&s, res), 0);
	expect_refused(res, "out.txt", "changed");
	assert_int_equal(store_count(f), 0);
	al_result_free(res);
	close(ws_rw);
}

/* ---- removal ----------------------------------------------------------- */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

static void test_remove_tree_deep_and_hostile(void **state)
{
	fixture *f = *state;
	int root = openat(f->ws, ".", O_RDONLY | O_DIRECTORY);
	assert_int_equal(mkdirat(root, "t", 0755), 0);
	/* outside: must survive */
	char *keep = al_strdup_printf("%s/keep", f->dir);
	assert_int_equal(mkdir(keep, 0700), 0);
	char *kf = al_strdup_printf("%s/file", keep);
	put(AT_FDCWD, kf, "keep");
	/* 3000 levels (far deeper than descriptors could follow) */
	int cur = openat(root, "t", O_RDONLY | O_DIRECTORY);
	for (int i = 0; i < 3000; i++) {
		assert_int_equal(mkdirat(cur, "d", 0755), 0);
		int next = openat(cur, "d", O_RDONLY | O_DIRECTORY);
		if (i % 500 == 0) {
			put(next, "f", "x");
			assert_int_equal(symlinkat(keep, next, "link"), 0);
		}
		close(cur);
		cur = next;
	}
	/* a directory without permissions at the bottom */
	assert_int_equal(mkdirat(cur, "locked", 0755), 0);
	put(cur, "locked/x", "x");
	int lk = openat(cur, "locked", O_RDONLY | O_DIRECTORY);
	assert_int_equal(fchmod(lk, 0), 0);
	close(lk);
	/* empty directories (removed without being opened), one without
	 * permissions, one holding only another */
	assert_int_equal(mkdirat(cur, "empty", 0), 0);
	assert_int_equal(mkdirat(cur, "outer", 0755), 0);
	assert_int_equal(mkdirat(cur, "outer/inner", 0755), 0);
	close(cur);
	int before = count_fds();
	assert_int_equal(al_remove_tree_at(root, "t"), 0);
	assert_int_equal(count_fds(), before);
	assert_int_equal(faccessat(root, "t", F_OK, AT_SYMLINK_NOFOLLOW), -1);
	char buf[8] = {0};
	int fd = open(kf, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf)), 4);
	close(fd);
	assert_string_equal(buf, "keep");
	/* a link given as the top is removed, not followed */
	assert_int_equal(symlinkat(keep, root, "l"), 0);
	assert_int_equal(al_remove_tree_at(root, "l"), 0);
	assert_int_equal(access(kf, F_OK), 0);
	close(root);
	free(kf);
	free(keep);
}

/* ---- the artifact store ------------------------------------------------ */

static void set_age(const char *state_dir, const char *run_id, int64_t secs)
{
	char *p = al_strdup_printf("%s/artifacts/%s", state_dir, run_id);
	struct timespec ts[2];
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= secs;
	ts[1] = ts[0];
	assert_int_equal(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
	free(p);
}

static void test_store_lock_and_retention(void **state)
{
	fixture *f = *state;
	char *sd = al_strdup_printf("%s/state", f->dir);
	assert_int_equal(mkdir(sd, 0700), 0);
	al_artifact_store live, old, young;
	assert_int_equal(al_artifacts_create(sd, "run-live", &live, NULL), 0);
	assert_int_equal(al_artifacts_create(sd, "run-old", &old, NULL), 0);
	assert_int_equal(al_artifacts_create(sd, "run-young", &young, NULL), 0);
	/* the same run id twice: refused */
	al_artifact_store dup;
	al_error *err = NULL;
	assert_true(al_artifacts_create(sd, "run-old", &dup, &err) < 0);
	assert_string_equal(al_error_get_reason(err), "artifacts_unavailable");
	al_error_free(err);
	err = NULL;
	assert_true(al_artifacts_create(sd, "../x", &dup, &err) < 0);
	al_error_free(err);
	err = NULL;
	put(old.dirfd, "out-1", "old");
	put(young.dirfd, "log", "young");
	put(live.dirfd, "log", "live");
	/* a store left empty (the run was refused) is not kept */
	al_artifact_store empty;
	assert_int_equal(al_artifacts_create(sd, "run-empty", &empty, NULL), 0);
	al_artifacts_close(&empty);
	assert_int_equal(al_artifact_open(sd, "run-empty", "log"), -ENOENT);
	char *ep = al_strdup_printf("%s/artifacts/run-empty", sd);
	assert_int_equal(access(ep, F_OK), -1);
	free(ep);
	assert_int_equal(symlinkat("/etc/passwd", live.dirfd, "out-9"), 0);
	al_artifacts_close(&old);
	al_artifacts_close(&young);
	set_age(sd, "run-old", 3 * 86400);
	set_age(sd, "run-live", 30 * 86400);

	/* readable by id, never through a link */
	int fd = al_artifact_open(sd, "run-old", "out-1");
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(al_artifact_open(sd, "run-old", "out-2"), -ENOENT);
	assert_int_equal(al_artifact_open(sd, "run-old", "../x"), -EINVAL);
	assert_int_equal(al_artifact_open(sd, "..", "log"), -EINVAL);
	assert_int_equal(al_artifact_open(sd, "run-live", "out-9"), -ENOENT);

	al_forget_stats st;
	assert_int_equal(al_artifacts_forget(sd, 86400000, NULL, 0, &st, NULL), 0);
	assert_int_equal(st.removed, 1); /* run-old */
	assert_int_equal(st.live, 1);	 /* run-live: old but locked */
	assert_int_equal(st.kept, 1);	 /* run-young */
	assert_int_equal(al_artifact_open(sd, "run-old", "out-1"), -ENOENT);
	fd = al_artifact_open(sd, "run-live", "log");
	assert_true(fd >= 0);
	close(fd);
	/* named: a live run is refused, an unknown one reported */
	char *ids[] = {"run-live", "run-none"};
	assert_int_equal(al_artifacts_forget(sd, 0, ids, 2, &st, NULL), 0);
	assert_int_equal(st.live, 1);
	assert_int_equal(st.missing, 1);
	assert_int_equal(st.removed, 0);
	al_artifacts_close(&live);
	assert_int_equal(al_artifacts_forget(sd, 0, ids, 1, &st, NULL), 0);
	assert_int_equal(st.removed, 1);
	/* /etc/passwd is still there: the link was removed, not followed */
	assert_int_equal(access("/etc/passwd", F_OK), 0);
	assert_int_equal(al_artifacts_forget(sd, 0, NULL, 0, &st, NULL), 0);
	assert_int_equal(st.removed, 1); /* run-young, with age 0 */
	free(sd);
}

static ino_t ino_at(int dirfd, const char *name)
{
	struct stat st;
	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_ino
								   : 0;
}

/* A store made ahead (in a spare run directory) becomes the run's store
 * when it is an empty directory of ours, 0700; anything else stays where
 * it was and a store is made as without one. */
static void test_store_made_ahead(void **state)
{
	fixture *f = *state;
	char *sd = al_strdup_printf("%s/state", f->dir);
	assert_int_equal(mkdir(sd, 0700), 0);
	char *ad = al_strdup_printf("%s/ahead", f->dir);
	assert_int_equal(mkdir(ad, 0700), 0);
	int afd = open(ad, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(afd >= 0);
	int sfd = open(sd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(sfd >= 0);

	/* taken: its inode is the store's */
	assert_int_equal(mkdirat(afd, ".artifacts", 0700), 0);
	ino_t made = ino_at(afd, ".artifacts");
	al_artifact_store s;
	assert_int_equal(al_artifacts_create_ahead(sd, "run-a", afd,
						   ".artifacts", &s, NULL),
			 0);
	assert_int_equal(ino_at(afd, ".artifacts"), 0);
	int art = openat(sfd, "artifacts", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(art >= 0);
	assert_int_equal(ino_at(art, "run-a"), made);
	assert_true(al_artifacts_live(sd, "run-a"));
	al_artifacts_close(&s);

	/* none there: made as without one */
	assert_int_equal(al_artifacts_create_ahead(sd, "run-b", afd,
						   ".artifacts", &s, NULL),
			 0);
	assert_true(ino_at(art, "run-b") != 0);
	al_artifacts_close(&s);

	/* not empty, or not 0700, or a link: left where it was, its content
	 * untouched, and the run's store is a new one */
	assert_int_equal(mkdirat(afd, ".artifacts", 0700), 0);
	int planted = openat(afd, ".artifacts", O_RDONLY | O_DIRECTORY);
	assert_true(planted >= 0);
	put(planted, "log", "planted");
	close(planted);
	made = ino_at(afd, ".artifacts");
	assert_int_equal(al_artifacts_create_ahead(sd, "run-c", afd,
						   ".artifacts", &s, NULL),
			 0);
	assert_int_equal(ino_at(afd, ".artifacts"), made);
	assert_true(ino_at(art, "run-c") != made);
	assert_int_equal(al_artifact_open(sd, "run-c", "log"), -ENOENT);
	al_artifacts_close(&s);
	char *pl = al_strdup_printf("%s/.artifacts/log", ad);
	assert_int_equal(unlink(pl), 0);
	free(pl);
	assert_int_equal(fchmodat(afd, ".artifacts", 0755, 0), 0);
	assert_int_equal(al_artifacts_create_ahead(sd, "run-d", afd,
						   ".artifacts", &s, NULL),
			 0);
	assert_int_equal(ino_at(afd, ".artifacts"), made);
	al_artifacts_close(&s);
	assert_int_equal(unlinkat(afd, ".artifacts", AT_REMOVEDIR), 0);
	assert_int_equal(symlinkat(ad, afd, ".artifacts"), 0);
	assert_int_equal(al_artifacts_create_ahead(sd, "run-e", afd,
						   ".artifacts", &s, NULL),
			 0);
	struct stat st;
	assert_int_equal(fstatat(afd, ".artifacts", &st, AT_SYMLINK_NOFOLLOW),
			 0);
	assert_true(S_ISLNK(st.st_mode));
	al_artifacts_close(&s);
	close(art);
	close(sfd);
	close(afd);
	free(ad);
	free(sd);
}

static void test_runlog_caps_each_stream(void **state)
{
	fixture *f = *state;
	al_runlog log;
	al_runlog_open(&log, f->store, 4, NULL, NULL);
	assert_true(log.fd >= 0);
	al_runlog_output(&log, AL_STDOUT, (const unsigned char *)"abc", 3);
	al_runlog_output(&log, AL_STDERR, (const unsigned char *)"XYZ", 3);
	al_runlog_output(&log, AL_STDOUT, (const unsigned char *)"def", 3);
	al_runlog_output(&log, AL_STDERR, (const unsigned char *)"W", 1);
	al_runlog_output(&log, AL_STDERR, (const unsigned char *)"V", 1);
	al_runlog_close(&log);
	int fd = openat(f->store, "log", O_RDONLY);
	char buf[64];
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	assert_int_equal(n, 8);
	assert_memory_equal(buf, "abcXYZdW", 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_regular_files_and_globs,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_hostile_entries_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_hostile_entries_refused_by_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_byte_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_file_limit_and_no_store,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_swapped_during_collection,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_remove_tree_deep_and_hostile, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_made_ahead, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_store_lock_and_retention,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_runlog_caps_each_stream,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
