/* The compiled seccomp filter on disk; see filter_cache.h. */
#include "sandbox/filter_cache.h"

#include <dirent.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <seccomp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <airlock/json.h>

#include "core/code_file.h"
#include "core/util.h"
#include "sandbox/observation_cache.h"

#define FORMAT 1
#define MAGIC "airlock-bpf-1\n"
/* Files kept (builds or libseccomp versions sharing one cache dir). */
#define FILES_MAX 8

typedef struct header {
	char magic[16];
	char key[64];
	char digest[64]; /* SHA-256 (hex) of the instructions */
	uint32_t len;	 /* instructions */
	uint32_t pad;
} header;

/* ---- key ------------------------------------------------------------- */

/* The file that holds fn (the main program when it is not a library). */
static void put_object(FILE *m, const char *label, const void *fn)
{
	al_sb_key_put_stat(m, label, al_code_file(fn));
}

int al_sb_filter_key(char key[AL_SB_FILTER_KEY_LEN])
{
	al_sb_keytext k;
	char first[48];
	snprintf(first, sizeof(first), "airlock-seccomp-filter %d", FORMAT);
	if (al_sb_key_begin(&k, first) < 0)
		return -ENOMEM;
	FILE *m = k.m;
	const struct scmp_version *v = seccomp_version();
	fprintf(m, "libseccomp=%u.%u.%u api=%u\n", v ? v->major : 0,
		v ? v->minor : 0, v ? v->micro : 0, seccomp_api_get());
	/* the policy table itself, so a changed table never meets a filter
	 * compiled from an older one, whatever the file identities below
	 * say; libseccomp's output is its code */
	al_sb_policy_describe(m);
	put_object(m, "code", (const void *)(uintptr_t)al_sb_filter_key);
	put_object(m, "libseccomp", (const void *)(uintptr_t)seccomp_init);
	return al_sb_key_end(&k, key);
}

/* ---- file ------------------------------------------------------------ */

/* Only a directory no one else can write is trusted. */
static bool dir_is_ours(const char *dir)
{
	struct stat st;
	return dir != NULL && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
	       st.st_uid == geteuid() && (st.st_mode & 022) == 0;
}

static char *file_path(const char *dir, const char *key)
{
	return al_strdup_printf("%s/seccomp-%.16s.bpf", dir, key);
}

static void digest_of(const al_sb_filter *f, char hex[65])
{
	al_sha256_hex(f->insns, (size_t)f->len * sizeof(*f->insns), hex);
}

int al_sb_filter_cache_load(const char *dir, const char *key,
			    al_sb_filter *out)
{
	memset(out, 0, sizeof(*out));
	if (!dir_is_ours(dir) || strlen(key) != 64)
		return -ENOENT;
	char *path = file_path(dir, key);
	int fd = path ? open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
	free(path);
	if (fd < 0)
		return -ENOENT;
	int rc = -ENOENT;
	header h;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 077) != 0 ||
	    read(fd, &h, sizeof(h)) != (ssize_t)sizeof(h) ||
	    memcmp(h.magic, MAGIC, sizeof(MAGIC)) != 0 ||
	    memcmp(h.key, key, sizeof(h.key)) != 0 || h.len == 0 ||
	    h.len > BPF_MAXINSNS ||
	    st.st_size != (off_t)(sizeof(h) + h.len * sizeof(struct sock_filter)))
		goto out;
	size_t bytes = h.len * sizeof(struct sock_filter);
	out->insns = malloc(bytes);
	if (out->insns == NULL ||
	    read(fd, out->insns, bytes) != (ssize_t)bytes)
		goto out;
	out->len = (unsigned short)h.len;
	char hex[65];
	digest_of(out, hex);
	/* the last instruction of a filter returns */
	if (memcmp(hex, h.digest, sizeof(h.digest)) == 0 &&
	    BPF_CLASS(out->insns[h.len - 1].code) == BPF_RET)
		rc = 0;
out:
	close(fd);
	if (rc < 0)
		al_sb_filter_clear(out);
	return rc;
}

/* Keeps the newest FILES_MAX filters: other builds' keys age out. */
static void prune(const char *dir)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return;
	for (;;) {
		size_t n = 0;
		char oldest[NAME_MAX + 1] = "";
		struct timespec oldest_at = {0};
		struct dirent *de;
		rewinddir(d);
		while ((de = readdir(d)) != NULL) {
			size_t l = strlen(de->d_name);
			struct stat st;
			if (strncmp(de->d_name, "seccomp-", 8) != 0 || l < 4 ||
			    strcmp(de->d_name + l - 4, ".bpf") != 0 ||
			    fstatat(dirfd(d), de->d_name, &st,
				    AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			n++;
			if (oldest[0] == '\0' ||
			    st.st_mtim.tv_sec < oldest_at.tv_sec ||
			    (st.st_mtim.tv_sec == oldest_at.tv_sec &&
			     st.st_mtim.tv_nsec < oldest_at.tv_nsec)) {
				snprintf(oldest, sizeof(oldest), "%s", de->d_name);
				oldest_at = st.st_mtim;
			}
		}
		if (n <= FILES_MAX || unlinkat(dirfd(d), oldest, 0) < 0)
			break;
	}
	closedir(d);
}

void al_sb_filter_cache_store(const char *dir, const char *key,
			      const al_sb_filter *f)
{
	static atomic_uint seq;
	if (!dir_is_ours(dir) || strlen(key) != 64 || f->insns == NULL)
		return;
	header h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, MAGIC, sizeof(MAGIC));
	memcpy(h.key, key, sizeof(h.key));
	char hex[65];
	digest_of(f, hex);
	memcpy(h.digest, hex, sizeof(h.digest));
	h.len = f->len;
	char *path = file_path(dir, key);
	char *tmp = al_strdup_printf("%s/.seccomp.%d.%u.tmp", dir,
				     (int)getpid(), atomic_fetch_add(&seq, 1));
	int fd = tmp ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					 O_CLOEXEC,
			    0600)
		     : -1;
	bool ok = fd >= 0 && path != NULL &&
		  al_write_all(fd, &h, sizeof(h)) == 0 &&
		  al_write_all(fd, f->insns,
			       (size_t)f->len * sizeof(*f->insns)) == 0;
	if (fd >= 0 && close(fd) < 0)
		ok = false;
	if (ok && rename(tmp, path) == 0)
		prune(dir);
	else if (fd >= 0)
		unlink(tmp);
	free(tmp);
	free(path);
}
