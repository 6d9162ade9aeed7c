/* The host database's VFS (src/host/db_vfs.c): a WAL is marked durable in
 * its directory only after a directory sync, a new WAL inode is not, and
 * the data written through either path reads back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/db.h"
#include "host/db_vfs.h"

typedef struct fx {
	char dir[64];
	char wal[128];
	char db[128];
	int xattrs; /* the file system keeps user xattrs */
} fx;

static int setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/al-dbvfs-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->wal, sizeof(f->wal), "%s/airlock.db-wal", f->dir);
	snprintf(f->db, sizeof(f->db), "%s/airlock.db", f->dir);
	char probe[128];
	snprintf(probe, sizeof(probe), "%s/probe", f->dir);
	int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	f->xattrs = fsetxattr(fd, "user.al-test", "1", 1, 0) == 0;
	close(fd);
	unlink(probe);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fx *f = *state;
	char p[160];
	static const char *const names[] = {"airlock.db", "airlock.db-wal",
					    "airlock.db-shm",
					    "airlock.db-journal", "wal.copy"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", f->dir, names[i]);
		unlink(p);
	}
	rmdir(f->dir);
	free(f);
	return 0;
}

static void insert_row(al_db *d, const char *key, const char *result)
{
	char sql[400];
	snprintf(sql, sizeof(sql),
		 "INSERT INTO idempotency VALUES('t', '%s', 'h', '%s', 0)",
		 key, result);
	assert_int_equal(sqlite3_exec(d->db, sql, NULL, NULL, NULL),
			 SQLITE_OK);
}

static void insert_rows(al_db *d, int n)
{
	for (int i = 0; i < n; i++) {
		char key[32];
		snprintf(key, sizeof(key), "k%d-%d", n, i);
		insert_row(d, key, "r");
	}
}

static int count_rows(const char *dir)
{
	al_db *d = NULL;
	assert_int_equal(al_db_open(dir, 1000, &d, NULL), 0);
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(d->db,
					    "SELECT count(*) FROM idempotency",
					    -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	al_db_close(d);
	return n;
}

static void test_vfs_is_used(void **state)
{
	fx *f = *state;
	al_db *d = NULL;
	assert_int_equal(al_db_open(f->dir, 1000, &d, NULL), 0);
	sqlite3_vfs *vfs = NULL;
	assert_int_equal(sqlite3_file_control(d->db, "main",
					      SQLITE_FCNTL_VFS_POINTER, &vfs),
			 SQLITE_OK);
	assert_non_null(vfs);
	assert_string_equal(vfs->zName, "airlock-unix");
	al_db_close(d);
}

/* The first open creates the WAL: marked after the directory sync where
 * the file system keeps xattrs, never otherwise; later opens find it
 * marked and what they commit reads back. */
static void test_new_wal_marked_after_sync(void **state)
{
	fx *f = *state;
	al_db *d = NULL;
	assert_int_equal(al_db_open(f->dir, 1000, &d, NULL), 0);
	insert_rows(d, 3);
	al_db_close(d);
	struct stat st;
	assert_int_equal(stat(f->wal, &st), 0);
	assert_int_equal(al_db_wal_marked(f->wal), f->xattrs);

	assert_int_equal(al_db_open(f->dir, 1000, &d, NULL), 0);
	insert_rows(d, 2);
	al_db_close(d);
	struct stat st2;
	assert_int_equal(stat(f->wal, &st2), 0);
	assert_int_equal(st.st_ino, st2.st_ino); /* the same WAL, reused */
	assert_int_equal(count_rows(f->dir), 5);
}

/* A WAL replaced by another inode (same bytes) carries no mark: it is
 * opened as SQLite always did, then marked; nothing committed is lost. */
static void test_replaced_wal_not_trusted(void **state)
{
	fx *f = *state;
	al_db *d = NULL;
	assert_int_equal(al_db_open(f->dir, 1000, &d, NULL), 0);
	insert_rows(d, 4);
	al_db_close(d);

	char copy[160];
	snprintf(copy, sizeof(copy), "%s/wal.copy", f->dir);
	int in = open(f->wal, O_RDONLY | O_CLOEXEC);
	int out = open(copy, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(in >= 0 && out >= 0);
	char buf[8192];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
	assert_int_equal(rename(copy, f->wal), 0);
	assert_false(al_db_wal_marked(f->wal));

	assert_int_equal(al_db_open(f->dir, 1000, &d, NULL), 0);
	insert_rows(d, 1);
	al_db_close(d);
	assert_int_equal(al_db_wal_marked(f->wal), f->xattrs);
	assert_int_equal(count_rows(f->dir), 5);
}

/* Processes that commit once each (a refused `airlock run`) keep the
 * WAL short: a checkpoint that copied all of it lets the close empty it,
 * so no process recovers (and copies again) every earlier process's
 * frames.  Before, the WAL grew by each process's frames without end. */
static void test_wal_bounded_one_commit_per_open(void **state)
{
	fx *f = *state;
	off_t largest = 0;
	for (int i = 0; i < 120; i++) {
		al_db *d = NULL;
		assert_int_equal(al_db_open(f->dir, 1000, &d, NULL), 0);
		char key[32], result[208];
		snprintf(key, sizeof(key), "once-%d", i);
		snprintf(result, sizeof(result), "%0200d", i);
		insert_row(d, key, result);
		al_db_close(d);
		struct stat st;
		assert_int_equal(stat(f->wal, &st), 0);
		if (st.st_size > largest)
			largest = st.st_size;
	}
	/* 16 pages and the frames of the commit that crossed the mark. */
	assert_true(largest <= (off_t)(32 + 24 * (4096 + 24)));
	assert_int_equal(count_rows(f->dir), 120);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_vfs_is_used, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_new_wal_marked_after_sync,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_replaced_wal_not_trusted,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_wal_bounded_one_commit_per_open, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
