/* Helpers several unit tests share (header only: include after
 * <cmocka.h>; each is static inline, so a test that uses only some
 * compiles without warnings). */
#ifndef AL_TESTS_UNIT_SUPPORT_H
#define AL_TESTS_UNIT_SUPPORT_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <airlock/airlock.h>

#include "cgroup/cgroup.h"
#include "lang/languages.h"

/* How many names a directory holds, "." and ".." aside (hidden ones
 * count). */
static inline unsigned ut_dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	unsigned n = 0;
	const struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* How many threads this process has now. */
static inline unsigned ut_threads(void)
{
	return ut_dir_entries("/proc/self/task");
}

/* The thread count once it is back to `want`, or after a second what it
 * is then: a joined thread is gone for pthread_join before the kernel has
 * taken its task out of /proc/self/task. */
static inline unsigned ut_threads_back_to(unsigned want)
{
	unsigned n = ut_threads();
	for (int i = 0; i < 1000 && n != want; i++) {
		struct timespec ts = {0, 1000 * 1000};
		nanosleep(&ts, NULL);
		n = ut_threads();
	}
	return n;
}

static inline bool ut_exists(const char *path)
{
	struct stat st;
	return path != NULL && stat(path, &st) == 0;
}

/* Whether discovery found any hierarchy a run's cgroup can be made in. */
static inline bool ut_any_cgroup(const al_sb_cgroups *cg)
{
	if (cg->v2_base != NULL)
		return true;
	for (int i = 0; i < AL_CG__N; i++)
		if (cg->ver[i] != AL_CG_NONE)
			return true;
	return false;
}

/* Moves pid into the cgroup dir (its cgroup.procs). */
static inline void ut_cgroup_add(const char *dir, pid_t pid)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	FILE *f = fopen(path, "we");
	assert_non_null(f);
	fprintf(f, "%d\n", (int)pid);
	assert_int_equal(fclose(f), 0);
}

/* pid into every cgroup of a run's set. */
static inline void ut_cgroup_place(const al_sb_cgrun *run, pid_t pid)
{
	if (run->v2_dir != NULL)
		ut_cgroup_add(run->v2_dir, pid);
	for (int i = 0; i < AL_CG__N; i++)
		if (run->v1_dir[i] != NULL)
			ut_cgroup_add(run->v1_dir[i], pid);
}

/* One request (JSON text) executed on handle h of ops, under one run id
 * per process (prefix-PID: a caller may reuse one, and apart from other
 * processes'); execute must succeed.  The caller frees the result. */
static inline al_result *ut_execute_json(const al_provider_ops *ops,
					 al_provider_handle *h,
					 const char *text, const char *prefix)
{
	al_request *req = NULL;
	assert_int_equal(al_request_from_json(text, strlen(text), &req, NULL),
			 0);
	al_cancel *cancel = al_cancel_new();
	char run_id[40];
	snprintf(run_id, sizeof(run_id), "%s-%d", prefix, (int)getpid());
	al_exec exec = {.run_id = run_id, .request = req, .cancel = cancel};
	al_result *res = al_result_new();
	assert_int_equal(ops->execute(h, &exec, res, NULL), 0);
	al_cancel_free(cancel);
	al_request_free(req);
	return res;
}

/* Whether two facts list the same languages. */
/* A test group's setup: the provider's ops and its whole probe's facts
 * (0, or -1 when either is missing). */
static inline int ut_probe_whole(const char *provider,
				 const al_provider_ops **ops, al_facts **all)
{
	*ops = al_provider_lookup(provider);
	return *ops == NULL || (*ops)->probe(NULL, all, NULL) < 0 ? -1 : 0;
}

static inline bool ut_same_languages(const al_facts *a, const al_facts *b)
{
	if (a->n_languages != b->n_languages)
		return false;
	for (size_t i = 0; i < a->n_languages; i++)
		if (al_facts_find_language(b, a->languages[i].language) == NULL)
			return false;
	return true;
}

/* A language airlock knows that the facts lack, or NULL. */
static inline const char *ut_absent_language(const al_facts *f)
{
	const char *absent = NULL;
	for (const char *const *l = al_language_names(); *l != NULL; l++)
		if (al_facts_find_language(f, *l) == NULL)
			absent = *l;
	return absent;
}

#endif
