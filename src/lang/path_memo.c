/* PATH lookups remembered while PATH's directories are unchanged; see
 * path_memo.h. */
#include "lang/path_memo.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define ANSWERS_MAX 32

typedef struct answer {
	char *name;
	char *path; /* NULL: absent */
} answer;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int watch_fd = -1;
static char *watched_path; /* the PATH value watched */
static char **missing;	   /* its absolute entries that did not exist */
static size_t n_missing;
static answer answers[ANSWERS_MAX];
static size_t n_answers;

static void forget_answers(void)
{
	for (size_t i = 0; i < n_answers; i++) {
		free(answers[i].name);
		free(answers[i].path);
	}
	n_answers = 0;
}

static void forget_all(void)
{
	forget_answers();
	if (watch_fd >= 0)
		close(watch_fd);
	watch_fd = -1;
	free(watched_path);
	watched_path = NULL;
	for (size_t i = 0; i < n_missing; i++)
		free(missing[i]);
	free(missing);
	missing = NULL;
	n_missing = 0;
}

static bool add_missing(const char *dir)
{
	char **m = realloc(missing, (n_missing + 1) * sizeof(*m));
	if (m == NULL)
		return false;
	missing = m;
	missing[n_missing] = strdup(dir);
	return missing[n_missing++] != NULL;
}

/* Watches every absolute entry of path_env; false when it cannot. */
static bool watch(const char *path_env)
{
	const uint32_t mask = IN_ATTRIB | IN_CREATE | IN_DELETE |
			      IN_DELETE_SELF | IN_MOVE_SELF | IN_MOVED_FROM |
			      IN_MOVED_TO | IN_ONLYDIR;
	watch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	watched_path = strdup(path_env);
	if (watch_fd < 0 || watched_path == NULL)
		return false;
	for (const char *p = path_env; *p;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		char dir[PATH_MAX];
		if (len > 0 && p[0] == '/' && len < sizeof(dir)) {
			memcpy(dir, p, len);
			dir[len] = '\0';
			if (inotify_add_watch(watch_fd, dir, mask) < 0 &&
			    (errno != ENOENT || !add_missing(dir)))
				return false;
		}
		if (!colon)
			break;
		p = colon + 1;
	}
	return true;
}

/* true while nothing watched changed (events are drained; any event, an
 * overflow included, means a change). */
static bool unchanged(void)
{
	bool quiet = true;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	for (;;) {
		ssize_t n = read(watch_fd, buf, sizeof(buf));
		if (n > 0) {
			quiet = false;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return false;
		break;
	}
	for (size_t i = 0; quiet && i < n_missing; i++) {
		struct stat st;
		if (stat(missing[i], &st) == 0)
			return false;
	}
	return quiet;
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
	bool usable = watch_fd >= 0 && watched_path != NULL &&
		      strcmp(watched_path, path_env) == 0;
	if (usable && !unchanged()) {
		/* re-watch: a directory may have appeared or been replaced */
		forget_all();
		usable = false;
	}
	if (!usable) {
		forget_all();
		/* watched before searching: a change during the search is an
		 * event the next lookup sees */
		if (!watch(path_env)) {
			forget_all();
			pthread_mutex_unlock(&lock);
			return search(path_env, name, out);
		}
	}
	for (size_t i = 0; i < n_answers; i++) {
		if (strcmp(answers[i].name, name) == 0) {
			int rc = copy_answer(&answers[i], out);
			pthread_mutex_unlock(&lock);
			return rc;
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
