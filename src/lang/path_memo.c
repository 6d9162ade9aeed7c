/* PATH lookups remembered while PATH's directories are unchanged; see
 * path_memo.h. */
#include "lang/path_memo.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ANSWERS_MAX 32

typedef struct answer {
	char *name;
	char *path; /* NULL: absent */
} answer;

/* What a PATH directory was when the answers were found. */
typedef struct dir_state {
	char *dir;
	bool exists;
	dev_t dev;
	ino_t ino;
	struct timespec mtime, ctime;
} dir_state;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *snap_path; /* the PATH value the answers are for */
static dir_state *dirs;
static size_t n_dirs;
static unsigned snap_gen; /* bumped whenever the answers are dropped */
static answer answers[ANSWERS_MAX];
static size_t n_answers;

/* This thread's hold: depth, and the generation it last validated. */
static _Thread_local unsigned hold_depth;
static _Thread_local unsigned held_gen;
static _Thread_local bool held_valid;

static void forget_all(void)
{
	for (size_t i = 0; i < n_answers; i++) {
		free(answers[i].name);
		free(answers[i].path);
	}
	n_answers = 0;
	for (size_t i = 0; i < n_dirs; i++)
		free(dirs[i].dir);
	free(dirs);
	dirs = NULL;
	n_dirs = 0;
	free(snap_path);
	snap_path = NULL;
	snap_gen++;
}

static void stat_dir(dir_state *d)
{
	struct stat st;
	d->exists = stat(d->dir, &st) == 0;
	if (!d->exists)
		return;
	d->dev = st.st_dev;
	d->ino = st.st_ino;
	d->mtime = st.st_mtim;
	d->ctime = st.st_ctim;
}

static bool same_dir(const dir_state *a, const dir_state *b)
{
	return a->exists == b->exists &&
	       (!a->exists ||
		(a->dev == b->dev && a->ino == b->ino &&
		 a->mtime.tv_sec == b->mtime.tv_sec &&
		 a->mtime.tv_nsec == b->mtime.tv_nsec &&
		 a->ctime.tv_sec == b->ctime.tv_sec &&
		 a->ctime.tv_nsec == b->ctime.tv_nsec));
}

/* Records every absolute entry of path_env as it is now. */
static bool snapshot(const char *path_env)
{
	snap_path = strdup(path_env);
	if (snap_path == NULL)
		return false;
	for (const char *p = path_env; *p;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		if (len > 0 && p[0] == '/') {
			dir_state *nd = realloc(dirs, (n_dirs + 1) * sizeof(*nd));
			if (nd == NULL)
				return false;
			dirs = nd;
			memset(&dirs[n_dirs], 0, sizeof(dirs[n_dirs]));
			dirs[n_dirs].dir = strndup(p, len);
			if (dirs[n_dirs].dir == NULL)
				return false;
			stat_dir(&dirs[n_dirs++]);
		}
		if (!colon)
			break;
		p = colon + 1;
	}
	return true;
}

/* true while every PATH directory is as recorded. */
static bool unchanged(void)
{
	for (size_t i = 0; i < n_dirs; i++) {
		dir_state now = {.dir = dirs[i].dir};
		stat_dir(&now);
		if (!same_dir(&now, &dirs[i]))
			return false;
	}
	return true;
}

void al_path_memo_hold(void)
{
	if (hold_depth++ == 0)
		held_valid = false;
}

void al_path_memo_release(void)
{
	if (hold_depth > 0 && --hold_depth == 0)
		held_valid = false;
}

/* An answer found earlier is still executable (a chmod does not change
 * its directory). */
static bool still_executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

static int copy_answer(const answer *a, char **out)
{
	*out = NULL;
	if (a->path == NULL)
		return -ENOENT;
	*out = strdup(a->path);
	return *out ? 0 : -ENOMEM;
}

int al_path_memo_find(const char *path_env, const char *name,
		      al_path_search_fn search, char **out)
{
	pthread_mutex_lock(&lock);
	bool same_path = snap_path != NULL && strcmp(snap_path, path_env) == 0;
	/* validated by this thread's hold already, else stat the dirs */
	bool trusted = same_path && hold_depth > 0 && held_valid &&
		       held_gen == snap_gen;
	if (!trusted && !(same_path && unchanged())) {
		forget_all();
		/* recorded before searching: a change during the search
		 * shows at the next validation */
		if (!snapshot(path_env)) {
			forget_all();
			pthread_mutex_unlock(&lock);
			return search(path_env, name, out);
		}
	}
	if (hold_depth > 0) {
		held_valid = true;
		held_gen = snap_gen;
	}
	for (size_t i = 0; i < n_answers; i++) {
		if (strcmp(answers[i].name, name) == 0 &&
		    (answers[i].path == NULL ||
		     still_executable(answers[i].path))) {
			int rc = copy_answer(&answers[i], out);
			pthread_mutex_unlock(&lock);
			return rc;
		}
		if (strcmp(answers[i].name, name) == 0) {
			/* made non-executable: search again */
			free(answers[i].name);
			free(answers[i].path);
			answers[i] = answers[--n_answers];
			break;
		}
	}
	int rc = search(path_env, name, out);
	if ((rc == 0 || rc == -ENOENT) && n_answers < ANSWERS_MAX) {
		answer *a = &answers[n_answers];
		a->name = strdup(name);
		a->path = rc == 0 ? strdup(*out) : NULL;
		if (a->name != NULL && (rc != 0 || a->path != NULL)) {
			n_answers++;
		} else {
			free(a->name);
			free(a->path);
		}
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

void al_path_memo_reset(void)
{
	pthread_mutex_lock(&lock);
	forget_all();
	pthread_mutex_unlock(&lock);
}
