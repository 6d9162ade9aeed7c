/* The container provider's image store (docs/containers.md, "Images").
 *
 * DIR/<digest>/rootfs is an unpacked root filesystem and DIR/<digest>/
 * image.json what it is; DIR/names/<name> holds the digest a name points
 * at.  The digest is the SHA-256 of the tree's canonical listing — every
 * entry, sorted by path, with its type, mode, owner, size and content's
 * SHA-256 or link target — so the same tree always has the same digest
 * however it was made.  An image is never changed once stored: a new
 * build or import under a name stores a new digest and moves the name. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/hash.h"
#include "container/container.h"
#include "core/util.h"
#include "child/rundir.h"

bool al_ct_image_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > 64 || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static int hash_file(int dirfd, const char *name, char hex[65])
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	al_digest d;
	al_digest_init(&d);
	char buf[65536];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		al_digest_update(&d, buf, (size_t)n);
	int e = n < 0 ? -errno : 0;
	close(fd);
	al_digest_final(&d, hex);
	return e;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Feeds the listing of dir (at rel) into d, depth first, sorted. */
static int walk(al_digest *d, const char *dir, const char *rel, int depth)
{
	if (depth > 64)
		return -ELOOP;
	struct dirent **ents = NULL;
	int n = scandir(dir, &ents, NULL, by_name);
	if (n < 0)
		return -errno;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	int rc = dfd < 0 ? -errno : 0;
	for (int i = 0; i < n; i++) {
		const char *nm = ents[i]->d_name;
		if (rc < 0 || strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			rc = -errno;
			continue;
		}
		char line[PATH_MAX + 256], extra[PATH_MAX + 1] = "";
		if (S_ISREG(st.st_mode)) {
			rc = hash_file(dfd, nm, extra);
		} else if (S_ISLNK(st.st_mode)) {
			ssize_t l = readlinkat(dfd, nm, extra, PATH_MAX);
			extra[l > 0 ? l : 0] = '\0';
		} else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
			snprintf(extra, sizeof(extra), "%llu",
				 (unsigned long long)st.st_rdev);
		}
		int len = snprintf(line, sizeof(line), "%s/%s\t%o\t%u\t%u\t%lld\t%s\n",
				   rel, nm, (unsigned)st.st_mode,
				   (unsigned)st.st_uid, (unsigned)st.st_gid,
				   S_ISREG(st.st_mode) ? (long long)st.st_size
						       : 0LL,
				   extra);
		if (len > 0)
			al_digest_update(d, line, (size_t)len < sizeof(line)
							? (size_t)len
							: sizeof(line) - 1);
		if (rc == 0 && S_ISDIR(st.st_mode)) {
			char *sub = al_strdup_printf("%s/%s", dir, nm);
			char *subrel = al_strdup_printf("%s/%s", rel, nm);
			rc = sub && subrel ? walk(d, sub, subrel, depth + 1)
					   : -ENOMEM;
			free(sub);
			free(subrel);
		}
	}
	for (int i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

int al_ct_tree_digest(const char *dir, char hex[65])
{
	al_digest d;
	al_digest_init(&d);
	int rc = walk(&d, dir, "", 0);
	al_digest_final(&d, hex);
	return rc;
}

static int mkdir_p(const char *path)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(tmp, 0700) < 0 && errno != EEXIST ? -errno : 0;
}

int al_ct_image_tmpdir(const char *store, char **out)
{
	char *base = al_strdup_printf("%s/.tmp", store);
	if (base == NULL)
		return -ENOMEM;
	int rc = mkdir_p(base);
	char *t = rc == 0 ? al_strdup_printf("%s/XXXXXX", base) : NULL;
	free(base);
	if (t == NULL)
		return rc < 0 ? rc : -ENOMEM;
	if (mkdtemp(t) == NULL) {
		rc = -errno;
		free(t);
		return rc;
	}
	*out = t;
	return 0;
}

/* Writes path atomically (temp, fsync, rename). */
static int write_atomic(const char *path, const char *text)
{
	char *tmp = al_strdup_printf("%s.tmp", path);
	if (tmp == NULL)
		return -ENOMEM;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		      0600);
	int rc = fd < 0 ? -errno : 0;
	size_t n = strlen(text);
	if (rc == 0 && write(fd, text, n) != (ssize_t)n)
		rc = -EIO;
	if (rc == 0 && fsync(fd) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	if (rc == 0 && rename(tmp, path) < 0)
		rc = -errno;
	if (rc < 0)
		unlink(tmp);
	free(tmp);
	return rc;
}

int al_ct_image_store(const char *store, const char *name, const char *rootfs,
		      const char *source, char digest[65], al_error **err)
{
	char path[PATH_MAX], names[PATH_MAX];
	/* The run's mount points, made now: a runtime would otherwise make
	 * them in the shared tree at the first run. */
	static const char *const points[] = {"tmp",   "code",	    "build",
					     "inbox", "inbox-acks", "workspace",
					     "dev",   "proc"};
	for (size_t i = 0; i < sizeof(points) / sizeof(points[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", rootfs, points[i]);
		struct stat pst;
		if (lstat(path, &pst) < 0 && mkdir(path, 0755) < 0)
			return al_error_set(err, AL_ERR_IO, errno, "image_store",
					    "cannot make %s in the image",
					    points[i]);
		else if (lstat(path, &pst) == 0 && !S_ISDIR(pst.st_mode))
			return al_error_set(err, AL_ERR_INVALID_ARGUMENT, ENOTDIR,
					    "image_store",
					    "/%s in the image is not a directory",
					    points[i]);
	}
	int rc = al_ct_tree_digest(rootfs, digest);
	if (rc < 0)
		return al_error_set(err, AL_ERR_IO, -rc, "image_digest",
				    "cannot read the image's tree: %s",
				    strerror(-rc));
	snprintf(path, sizeof(path), "%s/%s", store, digest);
	snprintf(names, sizeof(names), "%s/names", store);
	if ((rc = mkdir_p(names)) < 0)
		return al_error_set(err, AL_ERR_IO, -rc, "image_store",
				    "cannot create %s", names);
	struct stat st;
	if (lstat(path, &st) == 0) {
		/* the same tree is stored already: drop this copy */
		char *parent = strdup(rootfs);
		char *slash = parent ? strrchr(parent, '/') : NULL;
		if (slash != NULL) {
			*slash = '\0';
			int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (pfd >= 0) {
				al_remove_tree_at(pfd, slash + 1);
				close(pfd);
			}
		}
		free(parent);
	} else {
		char *meta = NULL;
		json_t *o = json_pack("{s:s, s:s, s:s, s:I}", "digest", digest,
				      "name", name, "source", source,
				      "created_ms",
				      (json_int_t)al_now_ms());
		meta = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		char tmpimg[PATH_MAX + 8];
		snprintf(tmpimg, sizeof(tmpimg), "%s.new", path);
		char tmproot[PATH_MAX + 16];
		snprintf(tmproot, sizeof(tmproot), "%s/rootfs", tmpimg);
		char metap[PATH_MAX + 24];
		snprintf(metap, sizeof(metap), "%s/image.json", tmpimg);
		rc = meta == NULL ? -ENOMEM : 0;
		if (rc == 0 && mkdir(tmpimg, 0700) < 0)
			rc = -errno;
		if (rc == 0 && rename(rootfs, tmproot) < 0)
			rc = -errno;
		if (rc == 0)
			rc = write_atomic(metap, meta);
		if (rc == 0 && rename(tmpimg, path) < 0)
			rc = -errno;
		free(meta);
		if (rc < 0)
			return al_error_set(err, AL_ERR_IO, -rc, "image_store",
					    "cannot store the image: %s",
					    strerror(-rc));
	}
	snprintf(path, sizeof(path), "%s/names/%s", store, name);
	char line[80];
	snprintf(line, sizeof(line), "%s\n", digest);
	if ((rc = write_atomic(path, line)) < 0)
		return al_error_set(err, AL_ERR_IO, -rc, "image_store",
				    "cannot name the image: %s", strerror(-rc));
	return 0;
}

int al_ct_image_resolve(const char *store, const char *name, char digest[65],
			char **rootfs)
{
	if (!al_ct_image_name_ok(name))
		return -EINVAL;
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/names/%s", store, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	char buf[80] = "";
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 64)
		return -EIO;
	buf[64] = '\0';
	for (int i = 0; i < 64; i++)
		if (!((buf[i] >= '0' && buf[i] <= '9') ||
		      (buf[i] >= 'a' && buf[i] <= 'f')))
			return -EIO;
	memcpy(digest, buf, 65);
	if (rootfs != NULL) {
		*rootfs = al_strdup_printf("%s/%s/rootfs", store, digest);
		struct stat st;
		if (*rootfs == NULL)
			return -ENOMEM;
		if (lstat(*rootfs, &st) < 0 || !S_ISDIR(st.st_mode)) {
			free(*rootfs);
			*rootfs = NULL;
			return -ENOENT;
		}
	}
	return 0;
}

int al_ct_image_list(const char *store, json_t **out)
{
	json_t *a = json_array();
	if (a == NULL)
		return -ENOMEM;
	char names[PATH_MAX];
	snprintf(names, sizeof(names), "%s/names", store);
	struct dirent **ents = NULL;
	int n = scandir(names, &ents, NULL, by_name);
	for (int i = 0; i < n; i++) {
		char digest[65];
		if (ents[i]->d_name[0] != '.' &&
		    al_ct_image_resolve(store, ents[i]->d_name, digest, NULL) == 0)
			json_array_append_new(
				a, json_pack("{s:s, s:s}", "name",
					     ents[i]->d_name, "digest", digest));
		free(ents[i]);
	}
	free(ents);
	*out = a;
	return 0;
}

char *al_ct_images_default_dir(void)
{
	const char *env = getenv("AIRLOCK_STATE_DIR");
	if (env != NULL && env[0] == '/')
		return al_strdup_printf("%s/images", env);
	return strdup("/var/lib/airlock/images");
}
