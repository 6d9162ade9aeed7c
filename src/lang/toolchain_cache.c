/* Toolchain observation cache; see toolchain_cache.h. */
#include "lang/toolchain_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <airlock/json.h>

#include "core/cache_files.h"

#define CACHE_FORMAT 1
/* A cache file is a few hundred bytes; anything big is not ours. */
#define CACHE_MAX_BYTES (64 * 1024)
#define ROWS_MAX 16
/* Cache files kept per language (distinct PATH values seen). */
#define CACHE_FILES_MAX 8

typedef struct entry {
	char *path_env, *candidate, *candidate_id, *helper, *helper_id;
	char *path_id; /* identity of tc->path when observed */
	al_toolchain *tc;
} entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static entry memory[ROWS_MAX];

static void entry_clear(entry *e)
{
	free(e->path_env);
	free(e->candidate);
	free(e->candidate_id);
	free(e->helper);
	free(e->helper_id);
	free(e->path_id);
	al_toolchain_free(e->tc);
	memset(e, 0, sizeof(*e));
}

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static bool entry_matches(const entry *e, const al_toolchain_cache_key *key)
{
	char now[AL_FILE_ID_MAX];

	if (!e->tc || !str_eq(e->path_env, key->path_env) ||
	    !str_eq(e->candidate, key->candidate) ||
	    !str_eq(e->candidate_id, key->candidate_id) ||
	    !str_eq(e->helper, key->helper) ||
	    (key->helper && !str_eq(e->helper_id, key->helper_id)))
		return false;
	return al_file_id(e->tc->path, now) == 0 && str_eq(e->path_id, now);
}

static int entry_fill(entry *e, const al_toolchain_cache_key *key, const char *path_id,
		      const al_toolchain *tc)
{
	memset(e, 0, sizeof(*e));
	e->path_env = strdup(key->path_env);
	e->candidate = strdup(key->candidate);
	e->candidate_id = strdup(key->candidate_id);
	e->helper = key->helper ? strdup(key->helper) : NULL;
	e->helper_id = key->helper ? strdup(key->helper_id) : NULL;
	e->path_id = strdup(path_id);
	if (!e->path_env || !e->candidate || !e->candidate_id || !e->path_id ||
	    (key->helper && (!e->helper || !e->helper_id)) ||
	    al_toolchain_dup(tc, &e->tc)) {
		entry_clear(e);
		return -ENOMEM;
	}
	return 0;
}

/* ---- disk ---- */

/* One file per language and (PATH, candidate): processes that search
 * different PATHs (a service, tests, a shell) each keep their entry
 * instead of overwriting one file and re-observing every interpreter. */
static char *cache_file(const char *cache_dir, const al_lang_row *row,
			const char *path_env, const char *candidate)
{
	const char *a = path_env ? path_env : "", *b = candidate ? candidate : "";
	size_t al = strlen(a), bl = strlen(b);
	char *id = malloc(al + 1 + bl + 1), *p = NULL, hex[65];

	if (!id)
		return NULL;
	/* The NUL between them keeps ("a", "bc") apart from ("ab", "c"). */
	memcpy(id, a, al + 1);
	memcpy(id + al + 1, b, bl + 1);
	al_sha256_hex(id, al + 1 + bl, hex);
	free(id);
	hex[16] = '\0';
	if (asprintf(&p, "%s/%s-%s.json", cache_dir, row->language, hex) < 0)
		return NULL;
	return p;
}

/* Keeps at most CACHE_FILES_MAX files per language: the oldest go. */
static void prune(const char *cache_dir, const al_lang_row *row)
{
	char prefix[64];
	int n = snprintf(prefix, sizeof(prefix), "%s-", row->language);
	if (n > 0 && (size_t)n < sizeof(prefix))
		al_cache_files_prune(cache_dir, prefix, CACHE_FILES_MAX);
}

static const char *get_str(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* Parses the whole file from one read: json_loadfd reads a byte per
 * system call, a cost every cache hit would pay. */
static json_t *load_fd(int fd, size_t size)
{
	char *buf = malloc(size + 1);
	size_t got = 0;
	json_t *root = NULL;
	if (!buf)
		return NULL;
	while (got <= size) {
		ssize_t n = read(fd, buf + got, size + 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (got <= size)
		root = json_loadb(buf, got, JSON_REJECT_DUPLICATES, NULL);
	free(buf);
	return root;
}

/* Reads a cache file we wrote: a regular file owned by us that nobody
 * else can write, so nobody else can point us at another interpreter. */
static int disk_read(const char *cache_dir, const al_lang_row *row,
		     const al_toolchain_cache_key *key, entry *e)
{
	char *file = cache_file(cache_dir, row, key->path_env, key->candidate);
	json_t *root = NULL, *tcj, *roots;
	al_toolchain *tc = NULL;
	struct stat st;
	size_t i;
	json_t *item;
	int fd = -1, rc = -ENOENT;

	memset(e, 0, sizeof(*e));
	if (!file)
		return -ENOMEM;
	fd = open(file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		goto out;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) || st.st_size > CACHE_MAX_BYTES)
		goto out;
	root = load_fd(fd, (size_t)st.st_size);
	if (!json_is_object(root) ||
	    json_integer_value(json_object_get(root, "format")) != CACHE_FORMAT ||
	    !str_eq(get_str(root, "language"), row->language))
		goto out;
	tcj = json_object_get(root, "toolchain");
	roots = json_object_get(tcj, "extra_roots");
	if (!get_str(root, "path_env") || !get_str(root, "candidate") ||
	    !get_str(root, "candidate_id") || !get_str(root, "path_id") ||
	    !get_str(tcj, "toolchain") || !get_str(tcj, "version") ||
	    !get_str(tcj, "path") || !json_is_array(roots))
		goto out;
	rc = -ENOMEM;
	tc = calloc(1, sizeof(*tc));
	if (!tc)
		goto out;
	tc->language = strdup(row->language);
	tc->toolchain = strdup(get_str(tcj, "toolchain"));
	tc->version = strdup(get_str(tcj, "version"));
	tc->path = strdup(get_str(tcj, "path"));
	tc->extra_roots = calloc(1, sizeof(char *));
	if (!tc->language || !tc->toolchain || !tc->version || !tc->path || !tc->extra_roots)
		goto out;
	if (get_str(tcj, "helper_path") && !(tc->helper_path = strdup(get_str(tcj, "helper_path"))))
		goto out;
	json_array_foreach(roots, i, item) {
		if (!json_is_string(item)) {
			rc = -ENOENT;
			goto out;
		}
		if (al_strv_push(&tc->extra_roots, json_string_value(item)))
			goto out;
	}
	e->path_env = strdup(get_str(root, "path_env"));
	e->candidate = strdup(get_str(root, "candidate"));
	e->candidate_id = strdup(get_str(root, "candidate_id"));
	e->path_id = strdup(get_str(root, "path_id"));
	if (get_str(root, "helper")) {
		e->helper = strdup(get_str(root, "helper"));
		e->helper_id = get_str(root, "helper_id") ? strdup(get_str(root, "helper_id")) : NULL;
		if (!e->helper || !e->helper_id)
			goto out;
	}
	if (!e->path_env || !e->candidate || !e->candidate_id || !e->path_id)
		goto out;
	e->tc = tc;
	tc = NULL;
	rc = 0;
out:
	if (rc)
		entry_clear(e);
	al_toolchain_free(tc);
	json_decref(root);
	if (fd >= 0)
		close(fd);
	free(file);
	return rc;
}

static json_t *entry_json(const al_lang_row *row, const entry *e)
{
	json_t *roots = json_array();
	json_t *root = NULL;

	if (!roots)
		return NULL;
	for (size_t i = 0; e->tc->extra_roots && e->tc->extra_roots[i]; i++) {
		if (json_array_append_new(roots, json_string(e->tc->extra_roots[i]))) {
			json_decref(roots);
			return NULL;
		}
	}
	/* "o" steals roots even on failure. */
	root = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s?, s:s?, s:s, s:{s:s, s:s, s:s, s:o, s:s?}}",
			 "format", CACHE_FORMAT, "language", row->language,
			 "path_env", e->path_env, "candidate", e->candidate,
			 "candidate_id", e->candidate_id, "helper", e->helper,
			 "helper_id", e->helper_id, "path_id", e->path_id,
			 "toolchain", "toolchain", e->tc->toolchain, "version",
			 e->tc->version, "path", e->tc->path, "extra_roots", roots,
			 "helper_path", e->tc->helper_path);
	return root;
}

/* Temp file + rename: readers see the old or the new file, never half. */
static void disk_write(const char *cache_dir, const al_lang_row *row, const entry *e)
{
	char *file = cache_file(cache_dir, row, e->path_env, e->candidate);
	char *tmp = NULL;
	json_t *root = NULL;
	int fd = -1;

	if (!file)
		return;
	if (mkdir(cache_dir, 0700) < 0 && errno != EEXIST)
		goto out;
	if (asprintf(&tmp, "%s/.%s.json.XXXXXX", cache_dir, row->language) < 0) {
		tmp = NULL;
		goto out;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		free(tmp);
		tmp = NULL;
		goto out;
	}
	root = entry_json(row, e);
	if (!root || fchmod(fd, 0600) < 0 || json_dumpfd(root, fd, JSON_COMPACT) < 0 ||
	    close(fd) < 0) {
		fd = -1;
		unlink(tmp);
		goto out;
	}
	fd = -1;
	if (rename(tmp, file) < 0)
		unlink(tmp);
	else
		prune(cache_dir, row);
out:
	if (fd >= 0) {
		close(fd);
		unlink(tmp);
	}
	json_decref(root);
	free(tmp);
	free(file);
}

/* ---- public ---- */

int al_toolchain_cache_load(const al_lang_row *row, const al_toolchain_cache_key *key,
		    const char *cache_dir, al_toolchain **out)
{
	size_t slot = al_lang_row_index(row);
	entry disk;
	int rc = -ENOENT;

	*out = NULL;
	if (slot >= ROWS_MAX)
		return -ENOENT;
	pthread_mutex_lock(&cache_lock);
	if (entry_matches(&memory[slot], key))
		rc = al_toolchain_dup(memory[slot].tc, out);
	pthread_mutex_unlock(&cache_lock);
	if (rc != -ENOENT || !cache_dir)
		return rc;
	if (disk_read(cache_dir, row, key, &disk))
		return -ENOENT;
	if (entry_matches(&disk, key)) {
		rc = al_toolchain_dup(disk.tc, out);
		/* Promote it so the next lookup needs no file. */
		pthread_mutex_lock(&cache_lock);
		entry_clear(&memory[slot]);
		memory[slot] = disk;
		pthread_mutex_unlock(&cache_lock);
		return rc;
	}
	entry_clear(&disk);
	return -ENOENT;
}

void al_toolchain_cache_store(const al_lang_row *row, const al_toolchain_cache_key *key,
		     const char *cache_dir, const al_toolchain *tc)
{
	size_t slot = al_lang_row_index(row);
	char path_id[AL_FILE_ID_MAX];
	entry e;

	if (slot >= ROWS_MAX || al_file_id(tc->path, path_id) < 0 ||
	    entry_fill(&e, key, path_id, tc))
		return;
	if (cache_dir)
		disk_write(cache_dir, row, &e);
	pthread_mutex_lock(&cache_lock);
	entry_clear(&memory[slot]);
	memory[slot] = e;
	pthread_mutex_unlock(&cache_lock);
}

void al_toolchain_cache_forget(void)
{
	pthread_mutex_lock(&cache_lock);
	for (size_t i = 0; i < ROWS_MAX; i++)
		entry_clear(&memory[i]);
	pthread_mutex_unlock(&cache_lock);
}
