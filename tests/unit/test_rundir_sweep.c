/* The sweep of run directories whose creator is gone (docs/sandbox.md,
 * "Run directories of killed processes"): a directory goes only when its
 * owner mark is complete and nobody holds its lock; a live creator's (or
 * its child's), a directory without the mark, a link and anything else
 * stay; hidden leftovers of a dying maker go once old. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "child/rundir.h"
#include "child/rundir_sweep.h"

typedef struct {
	char root[64];
	int fd;
} base_t;

static int setup(void **state)
{
	base_t *b = calloc(1, sizeof(*b));
	if (b == NULL)
		return -1;
	snprintf(b->root, sizeof(b->root), "/tmp/al-rundir-sweep-XXXXXX");
	if (mkdtemp(b->root) == NULL) {
		free(b);
		return -1;
	}
	b->fd = open(b->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*state = b;
	return b->fd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	base_t *b = *state;
	close(b->fd);
	int rc = al_remove_tree_at(AT_FDCWD, b->root);
	free(b);
	return rc;
}

static bool exists_at(int fd, const char *name)
{
	struct stat st;
	return fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static bool any_name(const char *name)
{
	return strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* How many entries the base holds, hidden ones included. */
static int entries(int fd)
{
	char **names = NULL;
	size_t n = 0;
	assert_int_equal(al_dir_names_at(fd, any_name, &names, &n), 0);
	al_strv_free(names, n);
	return (int)n;
}

/* A child makes base/id and keeps it (lock included) until it is told
 * to go (write to *go) or, with go NULL, exits at once without removing
 * it: a killed creator.  Its pid. */
static pid_t child_makes(const base_t *b, const char *id, int *go)
{
	int ready[2], wait_p[2];
	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(wait_p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		close(wait_p[1]);
		al_rundir rd;
		char c = al_rundir_create(b->root, id, &rd, NULL) == 0 ? 'y'
									 : 'n';
		if (write(ready[1], &c, 1) != 1 || go == NULL)
			_exit(0);
		if (read(wait_p[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	char c = 0;
	assert_int_equal(read(ready[0], &c, 1), 1);
	assert_int_equal(c, 'y');
	close(ready[0]);
	close(ready[1]);
	close(wait_p[0]);
	if (go != NULL)
		*go = wait_p[1];
	else
		close(wait_p[1]);
	if (go == NULL)
		assert_int_equal(waitpid(pid, NULL, 0), pid);
	return pid;
}

static void make_dir_with_mark(int fd, const char *name, const char *mark)
{
	assert_int_equal(mkdirat(fd, name, 0700), 0);
	if (mark == NULL)
		return;
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", name, AL_RUNDIR_OWNER);
	int f = openat(fd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(f >= 0);
	assert_int_equal(write(f, mark, strlen(mark)), (ssize_t)strlen(mark));
	close(f);
}

static void age(int fd, const char *name)
{
	struct timespec old[2] = {{time(NULL) - 600, 0}, {time(NULL) - 600, 0}};
	assert_int_equal(utimensat(fd, name, old, AT_SYMLINK_NOFOLLOW), 0);
}

/* Ours, alive: kept; the same directory once its creator is gone: swept,
 * and nothing hidden is left of the sweep. */
static void test_live_kept_dead_swept(void **state)
{
	base_t *b = *state;
	al_rundir rd;
	assert_int_equal(al_rundir_create(b->root, "live-run", &rd, NULL), 0);
	assert_true(rd.owner_fd >= 0);
	(void)child_makes(b, "dead-run", NULL);
	assert_true(exists_at(b->fd, "dead-run"));
	assert_int_equal(al_rundir_sweep_at(b->fd), 1);
	assert_false(exists_at(b->fd, "dead-run"));
	assert_true(exists_at(b->fd, "live-run/code"));
	assert_int_equal(al_rundir_remove(&rd), 0);
	assert_int_equal(entries(b->fd), 0);
}

/* Another live process's directory is never swept; once that process
 * is gone it is. */
static void test_other_live_process_kept(void **state)
{
	base_t *b = *state;
	int go = -1;
	pid_t pid = child_makes(b, "other-run", &go);
	assert_int_equal(al_rundir_sweep_at(b->fd), 0);
	assert_true(exists_at(b->fd, "other-run/workspace"));
	close(go);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	assert_int_equal(al_rundir_sweep_at(b->fd), 1);
	assert_false(exists_at(b->fd, "other-run"));
}

/* What the sweep cannot prove a leftover of ours stays, old or not: no
 * mark, an empty or foreign mark, a mark that is not a file, a link to
 * a directory with a valid mark, a file named like a run id. */
static void test_unproven_kept(void **state)
{
	base_t *b = *state;
	make_dir_with_mark(b->fd, "no-mark", NULL);
	make_dir_with_mark(b->fd, "empty-mark", "");
	make_dir_with_mark(b->fd, "foreign-mark", "something else\n");
	make_dir_with_mark(b->fd, "dir-mark", NULL);
	assert_int_equal(mkdirat(b->fd, "dir-mark/" AL_RUNDIR_OWNER, 0700), 0);
	/* a valid unlocked mark, reached only through a link (".target"
	 * is no name the sweep considers) */
	make_dir_with_mark(b->fd, ".target", AL_RUNDIR_OWNER_MARK);
	assert_int_equal(symlinkat(".target", b->fd, "link"), 0);
	int f = openat(b->fd, "a-file", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	assert_true(f >= 0);
	close(f);
	const char *kept[] = {"no-mark", "empty-mark", "foreign-mark",
			      "dir-mark", "link", ".target", "a-file"};
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		age(b->fd, kept[i]);
	assert_int_equal(al_rundir_sweep_at(b->fd), 0);
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
		assert_true(exists_at(b->fd, kept[i]));
	assert_true(exists_at(b->fd, ".target/" AL_RUNDIR_OWNER));
}

/* A hidden directory (a maker or a sweeper that died on the way) goes
 * with a complete unlocked mark at once, without one only when old. */
static void test_hidden_leftovers(void **state)
{
	base_t *b = *state;
	make_dir_with_mark(b->fd, AL_RUNDIR_NEW_PREFIX "1-1", NULL);
	make_dir_with_mark(b->fd, AL_RUNDIR_NEW_PREFIX "1-2", "");
	make_dir_with_mark(b->fd, AL_RUNDIR_GONE_PREFIX "1-3", NULL);
	make_dir_with_mark(b->fd, AL_RUNDIR_GONE_PREFIX "1-4",
			   AL_RUNDIR_OWNER_MARK);
	assert_int_equal(al_rundir_sweep_at(b->fd), 1);
	assert_false(exists_at(b->fd, AL_RUNDIR_GONE_PREFIX "1-4"));
	assert_true(exists_at(b->fd, AL_RUNDIR_NEW_PREFIX "1-1"));
	age(b->fd, AL_RUNDIR_NEW_PREFIX "1-1");
	age(b->fd, AL_RUNDIR_NEW_PREFIX "1-2");
	age(b->fd, AL_RUNDIR_GONE_PREFIX "1-3");
	assert_int_equal(al_rundir_sweep_at(b->fd), 3);
	assert_false(exists_at(b->fd, AL_RUNDIR_NEW_PREFIX "1-1"));
}

/* The sweep at creation runs once for a base in a process, not at every
 * run (al_rundir_sweep_at, called directly, always does). */
static void test_rate_limited(void **state)
{
	base_t *b = *state;
	(void)child_makes(b, "first", NULL);
	al_rundir_sweep_maybe(b->fd);
	assert_false(exists_at(b->fd, "first"));
	(void)child_makes(b, "second", NULL);
	al_rundir_sweep_maybe(b->fd);
	assert_true(exists_at(b->fd, "second"));
	al_rundir a;
	assert_int_equal(al_rundir_create(b->root, "third", &a, NULL), 0);
	assert_true(exists_at(b->fd, "second"));
	assert_int_equal(al_rundir_sweep_at(b->fd), 1);
	assert_int_equal(al_rundir_remove(&a), 0);
}

/* A run id that exists already is refused, and the attempt leaves
 * nothing hidden behind; the existing directory is untouched. */
static void test_existing_id_refused(void **state)
{
	base_t *b = *state;
	al_rundir a, c;
	al_error *err = NULL;
	assert_int_equal(al_rundir_create(b->root, "same", &a, NULL), 0);
	assert_true(al_rundir_create(b->root, "same", &c, &err) < 0);
	assert_non_null(err);
	al_error_free(err);
	assert_null(c.root);
	assert_true(exists_at(b->fd, "same/code"));
	assert_int_equal(al_rundir_remove(&a), 0);
	assert_int_equal(entries(b->fd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* first: no earlier base (whose inode a later one may
		 * reuse) is remembered by the rate limit yet */
		cmocka_unit_test_setup_teardown(test_rate_limited, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_live_kept_dead_swept, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_other_live_process_kept,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_unproven_kept, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_hidden_leftovers, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_existing_id_refused, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
