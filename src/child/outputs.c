/* Declared outputs: matching, checking and copying (see outputs.h). */
#include "child/outputs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <airlock/json.h>

#include "bundle/beneath.h"
#include "core/hash.h"
#include "core/util.h"

typedef struct collector {
	const al_outputs_spec *spec;
	al_result *res;
	uint64_t max_bytes;
	uint64_t bytes;	  /* collected so far */
	unsigned files;	  /* collected so far */
	unsigned scanned; /* directory entries read */
	bool full;	  /* AL_OUTPUTS_MAX_ENTRIES reached */
} collector;

typedef struct strlist {
	char **v;
	size_t n, cap;
} strlist;

static void strlist_clear(strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* Takes s (freed on failure). */
static int strlist_push(strlist *l, char *s)
{
	if (s == NULL)
		return -ENOMEM;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		char **v = realloc(l->v, cap * sizeof(*v));
		if (v == NULL) {
			free(s);
			return -ENOMEM;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = s;
	return 0;
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- result entries --------------------------------------------------- */

static bool listed(const al_result *res, const char *path)
{
	for (size_t i = 0; i < res->n_outputs; i++)
		if (res->outputs[i].path && strcmp(res->outputs[i].path, path) == 0)
			return true;
	return false;
}

static al_output_file *new_entry(collector *c, const char *path)
{
	al_result *res = c->res;
	al_output_file *v = realloc(res->outputs,
				    (res->n_outputs + 1) * sizeof(*v));
	if (v == NULL)
		return NULL;
	res->outputs = v;
	al_output_file *e = &v[res->n_outputs];
	memset(e, 0, sizeof(*e));
	e->path = strdup(path);
	if (e->path == NULL)
		return NULL;
	res->n_outputs++;
	if (res->n_outputs >= AL_OUTPUTS_MAX_ENTRIES)
		c->full = true;
	return e;
}

static int refuse(collector *c, const char *path, const char *why)
{
	al_output_file *e = new_entry(c, path);
	if (e == NULL)
		return -ENOMEM;
	e->refused_reason = strdup(why);
	return e->refused_reason ? 0 : -ENOMEM;
}

/* ---- one file ---------------------------------------------------------- */

static const char *type_refusal(const struct stat *st)
{
	if (S_ISLNK(st->st_mode))
		return "symlink";
	if (S_ISDIR(st->st_mode))
		return "directory";
	if (S_ISFIFO(st->st_mode))
		return "fifo";
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		return "device";
	if (S_ISSOCK(st->st_mode))
		return "socket";
	if (!S_ISREG(st->st_mode))
		return "not_regular";
	if (st->st_nlink != 1)
		return "hardlink";
	return NULL;
}

static const char *open_refusal(int e)
{
	switch (e) {
	case ELOOP:
		return "symlink";
	case ENOENT:
	case ENOTDIR:
		return "missing";
	case EXDEV:
		return "escapes";
	default:
		return "unreadable";
	}
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static bool unchanged(const struct stat *a, const struct stat *b)
{
	return same_file(a, b) && a->st_size == b->st_size &&
	       a->st_nlink == b->st_nlink && a->st_mode == b->st_mode &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Copies fd (expected: exactly `size` bytes) into afd while hashing.
 * NULL, or the refusal. */
static const char *copy_file(int fd, int afd, uint64_t size, char hex[65])
{
	unsigned char buf[65536];
	al_digest d;
	uint64_t seen = 0;
	if (al_digest_init(&d) < 0)
		return "unreadable";
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			al_digest_clear(&d);
			return "unreadable";
		}
		if (n == 0)
			break;
		seen += (uint64_t)n;
		if (seen > size) { /* it grew while we read */
			al_digest_clear(&d);
			return "changed";
		}
		if (al_digest_update(&d, buf, (size_t)n) < 0) {
			al_digest_clear(&d);
			return "unreadable";
		}
		if (write_all(afd, buf, (size_t)n) < 0) {
			al_digest_clear(&d);
			return "store_failed";
		}
	}
	if (seen != size) {
		al_digest_clear(&d);
		return "changed";
	}
	return al_digest_final(&d, hex) < 0 ? "unreadable" : NULL;
}

/* Checks, reads and stores one file.  NULL when collected (hex, size and
 * *stored set), else the refusal. */
static const char *take_file(collector *c, const char *rel, const char *id,
			     char hex[65], uint64_t *size, bool *stored)
{
	const al_outputs_spec *s = c->spec;
	int pfd = -1, fd = -1, afd = -1;
	const char *why = NULL;
	struct stat st0, st1, st2;
	*stored = false;

	/* A path descriptor first: its type is known before anything is
	 * opened for reading (a FIFO or a device never is). */
	pfd = al_open_beneath(s->ws_dirfd, rel, O_PATH);
	if (pfd < 0) {
		why = open_refusal(-pfd);
		goto out;
	}
	if (fstat(pfd, &st0) < 0) {
		why = "unreadable";
		goto out;
	}
	if ((why = type_refusal(&st0)) != NULL)
		goto out;
	if ((uint64_t)st0.st_size > c->max_bytes - c->bytes) {
		why = "too_large";
		goto out;
	}
	if (s->store_dirfd < 0) {
		why = "no_store";
		goto out;
	}
	/* O_NONBLOCK: should it have become a FIFO meanwhile, the open
	 * cannot wait for a writer; the identity check then refuses it. */
	fd = al_open_beneath(s->ws_dirfd, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st1) < 0 || !unchanged(&st0, &st1)) {
		why = "changed";
		goto out;
	}
	afd = openat(s->store_dirfd, id,
		     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (afd < 0) {
		why = "store_failed";
		goto out;
	}
	*stored = true;
	if ((why = copy_file(fd, afd, (uint64_t)st0.st_size, hex)) != NULL)
		goto out;
	if (s->after_read != NULL)
		s->after_read(s->after_read_ctx, rel);
	/* Still the same file, unchanged, and still what the path names. */
	if (fstat(fd, &st2) < 0 || !unchanged(&st0, &st2)) {
		why = "changed";
		goto out;
	}
	close(pfd);
	pfd = al_open_beneath(s->ws_dirfd, rel, O_PATH);
	if (pfd < 0 || fstat(pfd, &st2) < 0 || !same_file(&st0, &st2)) {
		why = "changed";
		goto out;
	}
	if (close(afd) < 0) {
		afd = -1;
		why = "store_failed";
		goto out;
	}
	afd = -1;
	*size = (uint64_t)st0.st_size;
out:
	if (afd >= 0)
		close(afd);
	if (fd >= 0)
		close(fd);
	if (pfd >= 0)
		close(pfd);
	return why;
}

static int add_file(collector *c, const char *rel)
{
	if (listed(c->res, rel))
		return 0;
	if (c->files >= AL_OUTPUTS_MAX_FILES)
		return refuse(c, rel, "too_many_files");
	char id[16], hex[65];
	snprintf(id, sizeof(id), "out-%u", c->files + 1);
	uint64_t size = 0;
	bool stored;
	const char *why = take_file(c, rel, id, hex, &size, &stored);
	if (why != NULL) {
		if (stored)
			unlinkat(c->spec->store_dirfd, id, 0);
		return refuse(c, rel, why);
	}
	al_output_file *e = new_entry(c, rel);
	if (e == NULL) {
		unlinkat(c->spec->store_dirfd, id, 0);
		return -ENOMEM;
	}
	e->size = size;
	memcpy(e->sha256, hex, sizeof(e->sha256));
	e->artifact = strdup(id);
	if (e->artifact == NULL)
		return -ENOMEM;
	c->files++;
	c->bytes += size;
	return 0;
}

/* ---- patterns ---------------------------------------------------------- */

static bool has_wildcard(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '*' || s[i] == '?')
			return true;
	return false;
}

/* A name the result can carry as text: UTF-8, no control bytes. */
static bool name_ok(const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return false;
	return al_utf8_valid((const unsigned char *)name, n);
}

typedef struct expand {
	collector *c;
	strlist *out;
	bool bad_name;
	bool too_many;
} expand;

static char *join(const char *prefix, const char *name, size_t n)
{
	if (prefix[0] == '\0')
		return strndup(name, n);
	return al_strdup_printf("%s/%.*s", prefix, (int)n, name);
}

/* Matches the segments of rest beneath dirfd (prefix: the path so far).
 * Literal runs of segments are resolved in one link-free open. */
static int expand_at(expand *x, int dirfd, const char *prefix,
		     const char *rest)
{
	const char *slash = strchr(rest, '/');
	size_t seg_len = slash ? (size_t)(slash - rest) : strlen(rest);
	if (!has_wildcard(rest, seg_len)) {
		/* the longest literal run */
		const char *end = rest;
		for (;;) {
			const char *sl = strchr(end, '/');
			size_t l = sl ? (size_t)(sl - end) : strlen(end);
			if (has_wildcard(end, l))
				break;
			end += l;
			if (*end == '\0')
				break;
			end++;
		}
		size_t lit = (size_t)(end - rest);
		if (*end == '\0') /* no wildcard left: one candidate */
			return strlist_push(x->out, join(prefix, rest, lit));
		char *path = strndup(rest, lit - 1); /* without the '/' */
		char *sub = join(prefix, rest, lit - 1);
		int rc = -ENOMEM;
		if (path != NULL && sub != NULL) {
			int fd = al_open_beneath(dirfd, path,
						 O_RDONLY | O_DIRECTORY);
			rc = 0;
			if (fd >= 0) {
				rc = expand_at(x, fd, sub, end);
				close(fd);
			}
		}
		free(path);
		free(sub);
		return rc;
	}
	/* A wildcard segment: read this directory. */
	char pat[1025];
	if (seg_len >= sizeof(pat))
		return 0;
	memcpy(pat, rest, seg_len);
	pat[seg_len] = '\0';
	int fd = al_open_beneath(dirfd, ".", O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return 0;
	DIR *d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return 0;
	}
	strlist names = {0};
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (++x->c->scanned > AL_OUTPUTS_MAX_SCAN ||
		    names.n >= AL_OUTPUTS_MAX_ENTRIES) {
			x->too_many = true;
			break;
		}
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    fnmatch(pat, de->d_name, FNM_PERIOD) != 0)
			continue;
		if (!name_ok(de->d_name)) {
			x->bad_name = true;
			continue;
		}
		rc = strlist_push(&names, strdup(de->d_name));
	}
	if (rc == 0 && names.n > 1)
		qsort(names.v, names.n, sizeof(char *), by_string);
	for (size_t i = 0; rc == 0 && i < names.n; i++) {
		const char *nm = names.v[i];
		char *path = join(prefix, nm, strlen(nm));
		if (path == NULL) {
			rc = -ENOMEM;
			break;
		}
		if (slash == NULL) {
			rc = strlist_push(x->out, path);
			continue;
		}
		int sub = al_open_beneath(dirfd, nm, O_RDONLY | O_DIRECTORY);
		if (sub >= 0) { /* only real directories are descended */
			rc = expand_at(x, sub, path, slash + 1);
			close(sub);
		}
		free(path);
		if (x->out->n >= AL_OUTPUTS_MAX_ENTRIES)
			x->too_many = true;
	}
	strlist_clear(&names);
	closedir(d);
	return rc;
}

static unsigned wild_segments(const char *p)
{
	unsigned n = 0;
	while (*p) {
		const char *sl = strchr(p, '/');
		size_t l = sl ? (size_t)(sl - p) : strlen(p);
		n += has_wildcard(p, l);
		p += l;
		if (*p == '/')
			p++;
	}
	return n;
}

static int collect_pattern(collector *c, const char *pattern)
{
	if (!has_wildcard(pattern, strlen(pattern)))
		return add_file(c, pattern);
	if (wild_segments(pattern) > AL_OUTPUTS_MAX_WILD_SEGMENTS)
		return refuse(c, pattern, "pattern_too_deep");
	strlist found = {0};
	expand x = {.c = c, .out = &found};
	int rc = expand_at(&x, c->spec->ws_dirfd, "", pattern);
	if (rc == 0 && found.n > 1)
		qsort(found.v, found.n, sizeof(char *), by_string);
	for (size_t i = 0; rc == 0 && i < found.n && !c->full; i++)
		rc = add_file(c, found.v[i]);
	if (rc == 0 && !c->full) {
		if (x.too_many)
			rc = refuse(c, pattern, "too_many_matches");
		else if (x.bad_name)
			rc = refuse(c, pattern, "bad_name");
		else if (found.n == 0)
			rc = refuse(c, pattern, "no_match");
	}
	strlist_clear(&found);
	return rc;
}

int al_outputs_collect(const al_outputs_spec *spec, al_result *res)
{
	collector c = {
		.spec = spec,
		.res = res,
		.max_bytes = spec->max_bytes ? spec->max_bytes
					     : AL_OUTPUTS_MAX_BYTES,
	};
	for (size_t i = 0; i < spec->n_patterns && !c.full; i++) {
		int rc = collect_pattern(&c, spec->patterns[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}
