/* The audit chain under allocation failure (src/host/audit.c): whichever
 * allocation of an append fails, the record is either refused (an error
 * to the caller, nothing written) or committed with a hash that verifies —
 * never committed with a hash or a text that does not (jansson's
 * json_dumps, short of memory part way, can leave a key out).
 *
 * The failure is injected by this program's own malloc, which fails
 * exactly the Nth call made during one append; N walks every allocation
 * the append makes.  Under AddressSanitizer and valgrind (which own
 * malloc) nothing is injected and only the plain chain is checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <airlock/host.h>

#include "host/audit.h"
#include "host/db.h"

#if defined(__SANITIZE_ADDRESS__)
#define AL_INJECT 0
#else
#define AL_INJECT 1
/* glibc's allocator, under the name it keeps beside malloc. */
extern void *__libc_malloc(size_t n);

static long fail_at = -1; /* the call to fail, counted from arming */
static long calls;

void *malloc(size_t n)
{
	if (fail_at >= 0 && calls++ == fail_at)
		return NULL;
	return __libc_malloc(n);
}
#endif

static void arm(long at)
{
#if AL_INJECT
	calls = 0;
	fail_at = at;
#else
	(void)at;
#endif
}

/* How many allocations the append made (stops the injection). */
static long disarm(void)
{
#if AL_INJECT
	fail_at = -1;
	return calls;
#else
	return 0;
#endif
}

/* Whether this program's malloc is the one called (valgrind replaces
 * it with its own: the injection then has no effect). */
static bool injecting(void)
{
#if AL_INJECT
	void *(*volatile alloc)(size_t) = malloc;
	arm(0);
	void *p = alloc(16);
	disarm();
	free(p);
	return p == NULL;
#else
	return false;
#endif
}

static json_t *record(int i)
{
	char id[40];
	snprintf(id, sizeof(id), "00000000-0000-4000-8000-%012d", i);
	json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:{s:b}}", "event",
			      "run.started", "tenant", "default", "run_id", id,
			      "language", "sh", "grant", "network", 0);
	assert_non_null(r);
	return r;
}

static int64_t rows(al_db *d)
{
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(d->db, "SELECT count(*) FROM audit",
					    -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int64_t n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

static void remove_dir(const char *dir)
{
	static const char *const names[] = {"airlock.db", "airlock.db-wal",
					    "airlock.db-shm"};
	char p[160];
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

static void test_every_failed_allocation_refuses_or_verifies(void **state)
{
	(void)state;
	char dir[] = "/tmp/al-audit-XXXXXX";
	al_db *d = NULL;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(al_db_open(dir, 1000, &d, NULL), 0);

	bool inject = injecting();
	int64_t committed = 0;
	long refused = 0;
	for (long at = 0;; at++) {
		json_t *r = record((int)at);
		al_error *err = NULL;
		arm(at);
		int rc = al_audit_append(d, r, false, &err);
		long made = disarm();
		json_decref(r);
		if (rc == 0) {
			committed++;
		} else {
			/* A typed refusal the caller can act on. */
			refused++;
			assert_non_null(err);
			assert_string_equal(al_error_get_reason(err),
					    "audit_refused");
		}
		al_error_free(err);
		/* Nothing half-written: every committed record counts. */
		assert_int_equal(rows(d), committed);
		size_t n = 0;
		al_error *verr = NULL;
		int vr = al_audit_verify(dir, &n, &verr);
		if (vr < 0)
			fail_msg("allocation %ld failed, the append %s: %s", at,
				 rc == 0 ? "committed" : "was refused",
				 al_error_get_message(verr));
		assert_int_equal((int64_t)n, committed);
		al_error_free(verr);
		/* The append made fewer allocations than `at`: all were
		 * tried. */
		if (!inject || made <= at)
			break;
		assert_true(at < 10000);
	}
	if (inject)
		assert_true(refused > 0);
	al_db_close(d);
	remove_dir(dir);
}

/* Group commit: appends from many threads at once, FULL and NORMAL
 * mixed, each returns committed; the chain verifies and holds every
 * record exactly once. */
enum { THREADS = 6, PER_THREAD = 40 };

typedef struct appender {
	al_db *d;
	int base;
	int failed;
} appender;

static void *append_many(void *arg)
{
	appender *a = arg;
	for (int i = 0; i < PER_THREAD; i++) {
		json_t *r = record(a->base + i);
		if (al_audit_append(a->d, r, (i % 2) == 0, NULL) != 0)
			a->failed++;
		json_decref(r);
	}
	return NULL;
}

static void test_concurrent_appends_share_commits(void **state)
{
	(void)state;
	char dir[] = "/tmp/al-audit-XXXXXX";
	al_db *d = NULL;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(al_db_open(dir, 5000, &d, NULL), 0);
	pthread_t t[THREADS];
	appender a[THREADS];
	for (int i = 0; i < THREADS; i++) {
		a[i] = (appender){d, i * 1000, 0};
		assert_int_equal(pthread_create(&t[i], NULL, append_many, &a[i]),
				 0);
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(a[i].failed, 0);
	}
	assert_int_equal(rows(d), THREADS * PER_THREAD);
	assert_int_equal(d->audit_records, THREADS * PER_THREAD);
	assert_true(d->audit_commits >= 1 &&
		    d->audit_commits <= THREADS * PER_THREAD);
	size_t n = 0;
	al_error *verr = NULL;
	assert_int_equal(al_audit_verify(dir, &n, &verr), 0);
	assert_int_equal((int)n, THREADS * PER_THREAD);
	/* Every run id once. */
	sqlite3_stmt *st = NULL;
	assert_int_equal(
		sqlite3_prepare_v2(d->db,
				   "SELECT count(DISTINCT json_extract(record, "
				   "'$.run_id')) FROM audit",
				   -1, &st, NULL),
		SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), THREADS * PER_THREAD);
	sqlite3_finalize(st);
	al_db_close(d);
	remove_dir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			test_every_failed_allocation_refuses_or_verifies),
		cmocka_unit_test(test_concurrent_appends_share_commits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
