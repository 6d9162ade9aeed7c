/* The build cache: a compiled language's build output kept by key, one
 * checksummed file per entry, bounded in bytes with least-recently-used
 * eviction; see build_cache.h and docs/languages.md. */
#include "child/build_cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "lang/locate.h"

#define MAGIC "airlock-build-cache-1\n"
#define MAX_DEPTH 8
#define MAX_ENTRIES 4096
#define LOCK_NAME ".lock"

/* ---- key ---- */

static void h_str(struct sha256_ctx *h, const char *s)
{
	/* the NUL separates fields, so ("ab","c") != ("a","bc") */
	sha256_update(h, strlen(s) + 1, (const uint8_t *)s);
}

static void hex(const uint8_t *md, size_t n, char *out)
{
	static const char d[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = d[md[i] >> 4];
		out[2 * i + 1] = d[md[i] & 15];
	}
	out[2 * n] = '\0';
}

int al_build_cache_key(const al_toolchain *tc, char *const *argv,
		       char *const *env, const char *sources_digest,
		       char out[65])
{
	struct sha256_ctx h;
	uint8_t md[SHA256_DIGEST_SIZE];
	char id[AL_FILE_ID_MAX];

	/* The compiler's identity too: an upgraded binary misses. */
	if (al_file_id(tc->path, id) < 0)
		return -ENOENT;
	sha256_init(&h);
	h_str(&h, MAGIC);
	h_str(&h, tc->language);
	h_str(&h, tc->toolchain);
	h_str(&h, tc->version);
	h_str(&h, tc->path);
	h_str(&h, id);
	h_str(&h, tc->helper_path ? tc->helper_path : "");
	for (size_t i = 0; argv && argv[i]; i++)
		h_str(&h, argv[i]);
	h_str(&h, "\x01");
	for (size_t i = 0; env && env[i]; i++)
		h_str(&h, env[i]);
	h_str(&h, "\x01");
	h_str(&h, sources_digest);
	sha256_digest(&h, sizeof(md), md);
	hex(md, sizeof(md), out);
	return 0;
}

static bool key_valid(const char *key)
{
	size_t n = strspn(key, "0123456789abcdef");

	return n == 64 && key[64] == '\0';
}

/* ---- the cache dir ---- */

int al_build_cache_open(const char *dir)
{
	struct stat st;
	int fd;

	if (!dir || dir[0] != '/')
		return -EINVAL;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* trusted only when ours and private, like the state dir */
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* ---- growable buffer ---- */

typedef struct buf {
	unsigned char *p;
	size_t len, cap, max;
	int rc;
} buf;

static void put(buf *b, const void *data, size_t n)
{
	if (b->rc)
		return;
	if (b->len + n > b->max) {
		b->rc = -EFBIG;
		return;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		unsigned char *np;

		while (cap < b->len + n)
			cap *= 2;
		np = realloc(b->p, cap);
		if (!np) {
			b->rc = -ENOMEM;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void putf_header(buf *b, char kind, unsigned mode, unsigned long long size,
			const char *path)
{
	char line[4200];
	int n = snprintf(line, sizeof(line), "%c %o %llu %s\n", kind, mode & 0755, size, path);

	if (n < 0 || (size_t)n >= sizeof(line)) {
		b->rc = b->rc ? b->rc : -ENAMETOOLONG;
		return;
	}
	put(b, line, (size_t)n);
}

/* ---- pack: the build dir into one buffer ---- */

static bool name_ok(const char *n)
{
	return n[0] != '\0' && strcmp(n, ".") != 0 && strcmp(n, "..") != 0 &&
	       !strchr(n, '\n') && !strchr(n, ' ') && strlen(n) < 256;
}

/* Reads beneath dirfd without following links; anything but regular
 * files and directories (a link the build planted) makes the output
 * uncacheable. */
static int pack_dir(int dirfd, const char *prefix, int depth, size_t *count, buf *b)
{
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (depth > MAX_DEPTH)
		return -ELOOP;
	/* a descriptor of its own: a dup would share the read offset */
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while (rc == 0 && (e = readdir(d)) != NULL) {
		char path[4096];
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (!name_ok(e->d_name) || ++*count > MAX_ENTRIES) {
			rc = -EINVAL;
			break;
		}
		snprintf(path, sizeof(path), "%s%s%s", prefix, prefix[0] ? "/" : "", e->d_name);
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -errno;
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, e->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub < 0) {
				rc = -errno;
				break;
			}
			putf_header(b, 'D', st.st_mode, 0, path);
			rc = b->rc ? b->rc : pack_dir(sub, path, depth + 1, count, b);
			close(sub);
		} else if (S_ISREG(st.st_mode)) {
			int f = openat(dirfd, e->d_name,
				       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			struct stat fst;

			if (f < 0) {
				rc = -errno;
				break;
			}
			if (fstat(f, &fst) < 0 || !S_ISREG(fst.st_mode)) {
				close(f);
				rc = -EINVAL;
				break;
			}
			putf_header(b, 'F', fst.st_mode, (unsigned long long)fst.st_size, path);
			size_t start = b->len;
			unsigned char chunk[65536];
			ssize_t r;

			while (!b->rc && (r = read(f, chunk, sizeof(chunk))) > 0)
				put(b, chunk, (size_t)r);
			close(f);
			/* the file changed while read: not cacheable */
			if (!b->rc && b->len - start != (size_t)fst.st_size)
				rc = -EIO;
			rc = rc ? rc : b->rc;
		} else {
			rc = -EINVAL;
		}
	}
	closedir(d);
	return rc;
}

/* ---- unpack ---- */

static bool rel_ok(const char *path)
{
	const char *p = path;

	if (!*p || *p == '/')
		return false;
	while (*p) {
		const char *s = strchr(p, '/');
		size_t n = s ? (size_t)(s - p) : strlen(p);

		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
		if (*p == '/')
			p++;
	}
	return true;
}

/* Opens the parent of rel beneath root (each component without
 * following links); *leaf points at the last component. */
static int open_parent(int root, char *rel, const char **leaf)
{
	int fd = dup(root);
	char *p = rel, *s;

	if (fd < 0)
		return -errno;
	while ((s = strchr(p, '/')) != NULL) {
		*s = '\0';
		int nfd = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		*s = '/';
		close(fd);
		if (nfd < 0)
			return -errno;
		fd = nfd;
		p = s + 1;
	}
	*leaf = p;
	return fd;
}

static int unpack(const unsigned char *data, size_t len, int dest, uid_t uid, gid_t gid)
{
	size_t i = 0;

	while (i < len) {
		const unsigned char *nl = memchr(data + i, '\n', len - i);
		char line[4200], kind, path[4097];
		unsigned mode;
		unsigned long long size;
		const char *leaf = NULL;
		int pfd, rc = 0;

		if (!nl || (size_t)(nl - (data + i)) >= sizeof(line))
			return -EINVAL;
		memcpy(line, data + i, (size_t)(nl - (data + i)));
		line[nl - (data + i)] = '\0';
		i = (size_t)(nl - data) + 1;
		if (strcmp(line, "E") == 0)
			return i == len ? 0 : -EINVAL;
		if (sscanf(line, "%c %o %llu %4096s", &kind, &mode, &size, path) != 4 ||
		    !rel_ok(path) || size > len - i)
			return -EINVAL;
		pfd = open_parent(dest, path, &leaf);
		if (pfd < 0)
			return pfd;
		if (leaf == NULL) {
			close(pfd);
			return -EINVAL;
		}
		if (kind == 'D') {
			if (mkdirat(pfd, leaf, 0700) < 0)
				rc = -errno;
			else if (uid != (uid_t)-1 && fchownat(pfd, leaf, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
				rc = -errno;
			else if (fchmodat(pfd, leaf, mode & 0755, 0) < 0)
				rc = -errno;
		} else if (kind == 'F') {
			int f = openat(pfd, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				       0600);

			if (f < 0) {
				rc = -errno;
			} else {
				size_t off = 0;

				while (rc == 0 && off < size) {
					ssize_t w = write(f, data + i + off, (size_t)size - off);

					if (w <= 0)
						rc = w < 0 ? -errno : -EIO;
					else
						off += (size_t)w;
				}
				if (rc == 0 && uid != (uid_t)-1 && fchown(f, uid, gid) < 0)
					rc = -errno;
				if (rc == 0 && fchmod(f, mode & 0755) < 0)
					rc = -errno;
				close(f);
			}
			i += (size_t)size;
		} else {
			rc = -EINVAL;
		}
		close(pfd);
		if (rc)
			return rc;
	}
	return -EINVAL; /* no end mark */
}

/* ---- get / put ---- */

int al_build_cache_get(int cache_fd, const char *key, int dest_fd, uid_t uid,
		       gid_t gid, uint64_t max_bytes)
{
	struct stat st;
	unsigned char *data = NULL;
	int rc, fd;

	if (!key_valid(key))
		return -EINVAL;
	fd = openat(cache_fd, key, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_nlink != 1 || (uint64_t)st.st_size > max_bytes ||
	    (size_t)st.st_size < sizeof(MAGIC) - 1 + 2 + 65) {
		close(fd);
		return 0;
	}
	data = malloc((size_t)st.st_size);
	if (!data) {
		close(fd);
		return -ENOMEM;
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, data + got, (size_t)st.st_size - got);

		if (r <= 0)
			break;
		got += (size_t)r;
	}
	/* A hit counts as a use: least recently used goes first. */
	if (got == (size_t)st.st_size)
		(void)futimens(fd, NULL);
	close(fd);
	rc = 0;
	if (got == (size_t)st.st_size) {
		/* body, then the hex SHA-256 of the body and a newline */
		size_t body = got - 65;
		uint8_t md[SHA256_DIGEST_SIZE];
		char sum[65];
		struct sha256_ctx h;

		sha256_init(&h);
		sha256_update(&h, body, data);
		sha256_digest(&h, sizeof(md), md);
		hex(md, sizeof(md), sum);
		if (memcmp(sum, data + body, 64) == 0 && data[got - 1] == '\n' &&
		    memcmp(data, MAGIC, sizeof(MAGIC) - 1) == 0) {
			rc = unpack(data + sizeof(MAGIC) - 1, body - (sizeof(MAGIC) - 1), dest_fd,
				    uid, gid);
			rc = rc == 0 ? 1 : rc;
		}
	}
	free(data);
	return rc;
}

typedef struct entry {
	char name[65];
	off_t size;
	struct timespec mtime;
} entry;

static int by_age(const void *a, const void *b)
{
	const entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Removes the oldest entries until the cache holds at most max_bytes. */
static void evict(int cache_fd, uint64_t max_bytes, const char *keep)
{
	/* a descriptor of its own: a dup would share the read offset */
	int fd = openat(cache_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	entry *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		struct stat st;

		if (!key_valid(e->d_name) ||
		    fstatat(cache_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			entry *nv = realloc(v, (cap ? cap * 2 : 64) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
			cap = cap ? cap * 2 : 64;
		}
		memcpy(v[n].name, e->d_name, 65);
		v[n].size = st.st_size;
		v[n].mtime = st.st_mtim;
		total += (uint64_t)st.st_size;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), by_age);
	for (size_t i = 0; i < n && total > max_bytes; i++) {
		if (strcmp(v[i].name, keep) == 0)
			continue;
		if (unlinkat(cache_fd, v[i].name, 0) == 0)
			total -= (uint64_t)v[i].size;
	}
	free(v);
}

int al_build_cache_put(int cache_fd, const char *key, int src_fd, uint64_t max_bytes)
{
	buf b = { .max = max_bytes };
	size_t count = 0;
	char tmp[96], sum[65];
	uint8_t md[SHA256_DIGEST_SIZE];
	struct sha256_ctx h;
	int rc, fd, lock;

	if (!key_valid(key))
		return -EINVAL;
	put(&b, MAGIC, sizeof(MAGIC) - 1);
	rc = pack_dir(src_fd, "", 0, &count, &b);
	put(&b, "E\n", 2);
	if (rc || b.rc) {
		free(b.p);
		return rc ? rc : b.rc;
	}
	sha256_init(&h);
	sha256_update(&h, b.len, b.p);
	sha256_digest(&h, sizeof(md), md);
	hex(md, sizeof(md), sum);
	sum[64] = '\n';
	put(&b, sum, 65);
	if (b.rc || b.len > max_bytes) {
		free(b.p);
		return -EFBIG;
	}
	/* one writer at a time: eviction sees whole entries */
	lock = openat(cache_fd, LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0) {
		rc = -errno;
		goto out;
	}
	snprintf(tmp, sizeof(tmp), ".tmp-%.16s-%d", key, (int)getpid());
	fd = openat(cache_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	size_t off = 0;
	while (rc == 0 && off < b.len) {
		ssize_t w = write(fd, b.p + off, b.len - off);

		if (w <= 0)
			rc = w < 0 ? -errno : -EIO;
		else
			off += (size_t)w;
	}
	close(fd);
	if (rc == 0 && renameat(cache_fd, tmp, cache_fd, key) < 0)
		rc = -errno;
	if (rc)
		unlinkat(cache_fd, tmp, 0);
	else
		evict(cache_fd, max_bytes, key);
out:
	if (lock >= 0)
		close(lock);
	free(b.p);
	return rc;
}
