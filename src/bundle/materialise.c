/* Writing a bundle beneath directory descriptors and checking what was
 * written against the manifest (see bundle.h). */
#include "bundle/bundle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle/beneath.h"
#include "core/hash.h"

static int setup_error(al_error **err, int e, const char *what)
{
	bool space = e == ENOSPC || e == EDQUOT || e == EFBIG;
	return al_error_set(err, AL_ERR_UNAVAILABLE, e,
			    space ? "workspace_no_space"
				  : "workspace_setup_failed",
			    "cannot %s", what);
}

static int mismatch(al_error **err, const char *what)
{
	return al_error_set(err, AL_ERR_UNAVAILABLE, EBADMSG, "bundle_mismatch",
			    "%s", what);
}

/* Hashes the whole file behind fd (from offset 0) and compares size and
 * SHA-256 with the entry.  1 when they match, 0 when not, -errno. */
static int matches_entry(int fd, const al_manifest_entry *e)
{
	unsigned char buf[65536];
	al_digest d;
	uint64_t seen = 0;
	int rc = al_digest_init(&d);
	if (rc < 0)
		return rc;
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)seen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		seen += (uint64_t)n;
		if (seen > e->size) /* more than the entry: no need to go on */
			break;
		if ((rc = al_digest_update(&d, buf, (size_t)n)) < 0)
			break;
	}
	char hex[65];
	if (rc < 0) {
		al_digest_clear(&d);
		return rc;
	}
	if ((rc = al_digest_final(&d, hex)) < 0)
		return rc;
	return seen == e->size && strcmp(hex, e->sha256) == 0;
}

static int write_all(int fd, const unsigned char *data, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENOSPC;
		off += (size_t)n;
	}
	return 0;
}

/* Creates one file beneath dirfd, writes it, reads it back. */
static int put_one(int dirfd, const al_bundle_item *it,
		   const al_manifest_entry *e, uid_t uid, gid_t gid,
		   al_error **err)
{
	int parent = -1, fd = -1, rc;
	const char *base;
	bool input = it->kind == AL_BUNDLE_INPUT;
	if (!input && strchr(it->path, '/') != NULL)
		return mismatch(err, "the code's name is not a file name");
	rc = al_open_parent_beneath(dirfd, it->path, true, input ? uid : (uid_t)-1,
				    gid, &parent, &base);
	if (rc < 0)
		return setup_error(err, -rc, "create an input's directory");
	fd = openat(parent, base,
		    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = setup_error(err, errno, "create a bundle file");
		goto out;
	}
	if ((rc = write_all(fd, it->data, it->len)) < 0) {
		rc = setup_error(err, -rc, "write a bundle file");
		goto out;
	}
	rc = matches_entry(fd, e);
	if (rc < 0) {
		rc = setup_error(err, -rc, "read a bundle file back");
		goto out;
	}
	if (rc == 0) {
		rc = mismatch(err, "a file written differs from the manifest");
		goto out;
	}
	/* Owner first (a chown may clear mode bits), then the exact mode
	 * whatever the umask. */
	if ((input && uid != (uid_t)-1 && fchown(fd, uid, gid) < 0) ||
	    fchmod(fd, (mode_t)(it->mode & 0777u)) < 0) {
		rc = setup_error(err, errno, "set a bundle file's owner or mode");
		goto out;
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	if (parent >= 0)
		close(parent);
	return rc;
}

int al_bundle_materialise(const al_bundle *b, const al_manifest *m,
			  int code_dirfd, int ws_dirfd, uid_t uid, gid_t gid,
			  al_error **err)
{
	int rc = al_manifest_check(m, b, err);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < m->n; i++) {
		const al_bundle_item *it = al_bundle_item_at(b, i);
		int dirfd = it->kind == AL_BUNDLE_CODE ? code_dirfd : ws_dirfd;
		if (dirfd < 0)
			continue;
		if ((rc = put_one(dirfd, it, &m->entries[i], uid, gid, err)) < 0)
			return rc;
	}
	return 0;
}

int al_bundle_verify_inputs(const al_manifest *m, int ws_dirfd,
			    al_error **err)
{
	for (size_t i = 0; i < m->n; i++) {
		const al_manifest_entry *e = &m->entries[i];
		if (e->kind != AL_BUNDLE_INPUT)
			continue;
		int fd = al_open_beneath(ws_dirfd, e->path,
					 O_RDONLY | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			return mismatch(err, "an input file is missing");
		struct stat st;
		int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
			 (unsigned)(st.st_mode & 07777) == e->mode &&
			 (uint64_t)st.st_size == e->size;
		if (ok)
			ok = matches_entry(fd, e);
		close(fd);
		if (ok != 1)
			return mismatch(err, "an input file differs from the "
					     "manifest");
	}
	return 0;
}
