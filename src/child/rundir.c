/* A run's private directory on the host (see rundir.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bundle/bundle.h"
#include "core/util.h"
#include "child/rundir.h"
#include "child/rundir_sweep.h"

bool al_run_id_safe(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	if (n == 0 || n > 39)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return false;
	}
	return true;
}

static pthread_once_t tmpfs_once = PTHREAD_ONCE_INIT;
static char tmpfs_base[64]; /* empty: no usable tmpfs */

static void find_tmpfs(void)
{
	struct statfs sf;
	struct stat st;
	if (statfs("/dev/shm", &sf) == 0 && sf.f_type == TMPFS_MAGIC &&
	    lstat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == 0 && (st.st_mode & S_ISVTX))
		snprintf(tmpfs_base, sizeof(tmpfs_base), "/dev/shm/airlock-%u",
			 (unsigned)geteuid());
}

const char *al_rundir_tmpfs_base(void)
{
	pthread_once(&tmpfs_once, find_tmpfs);
	return tmpfs_base[0] != '\0' ? tmpfs_base : NULL;
}

int al_rundir_remove_leftover(const char *base, const char *run_id)
{
	if (base == NULL || !al_run_id_safe(run_id))
		return base == NULL ? 0 : -EINVAL;
	int fd = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	int rc = al_remove_tree_at(fd, run_id);
	close(fd);
	return rc == -ENOENT ? 0 : rc;
}

/* The base must be a real directory of ours that nobody else can write:
 * otherwise another user could pre-create or swap run directories.  Its
 * descriptor, checked (not a path checked, then opened), or -errno. */
static int open_private_dir(const char *path, al_error **err)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return al_error_set(err, AL_ERR_UNAVAILABLE, errno,
				    "workspace_setup_failed",
				    "cannot create the run base directory");
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 0077) != 0) {
		if (fd >= 0)
			close(fd);
		return al_error_set(err, AL_ERR_UNAVAILABLE, EPERM,
				    "workspace_setup_failed",
				    "the run base directory is not private");
	}
	return fd;
}

/* root and its three paths, from a malloc'd root (taken). */
static int set_paths(al_rundir *rd, char *root)
{
	free(rd->root);
	free(rd->code_dir);
	free(rd->workspace);
	free(rd->tmp);
	rd->root = root;
	rd->code_dir = root ? al_strdup_printf("%s/code", root) : NULL;
	rd->workspace = root ? al_strdup_printf("%s/workspace", root) : NULL;
	rd->tmp = root ? al_strdup_printf("%s/tmp", root) : NULL;
	return rd->root && rd->code_dir && rd->workspace && rd->tmp ? 0
								    : -ENOMEM;
}

int al_rundir_make(const char *base, al_rundir *out, al_error **err)
{
	char *owned_base = NULL;
	char name[64];
	int rc = 0, base_fd = -1;

	memset(out, 0, sizeof(*out));
	out->owner_fd = -1;
	if (base == NULL)
		base = getenv("AIRLOCK_RUN_BASE");
	if (base == NULL) {
		const char *tmp = getenv("TMPDIR");
		if (tmp == NULL || tmp[0] != '/')
			tmp = "/tmp";
		owned_base = al_strdup_printf("%s/airlock-%u", tmp,
					      (unsigned)geteuid());
		if (owned_base == NULL)
			return -ENOMEM;
		base = owned_base;
	}
	if ((base_fd = open_private_dir(base, err)) < 0) {
		rc = base_fd;
		goto out;
	}
	/* Leftovers of killed processes in this base (rundir_sweep.h). */
	al_rundir_sweep_maybe(base_fd);
	rc = al_rundir_owned_mkdir_hidden(base_fd, name, sizeof(name),
					  &out->owner_fd);
	if (rc < 0) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, -rc,
				  "workspace_setup_failed",
				  "cannot create the run directory");
		goto out;
	}
	if (set_paths(out, al_strdup_printf("%s/%s", base, name)) < 0) {
		rc = -ENOMEM;
		al_rundir_remove(out);
		goto out;
	}
	/* laid out while hidden: no run id ever names a part of one */
	if (mkdir(out->code_dir, 0700) < 0 || mkdir(out->workspace, 0700) < 0 ||
	    mkdir(out->tmp, 0700) < 0) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, errno,
				  "workspace_setup_failed",
				  "cannot lay out the run directory");
		al_rundir_remove(out);
	}
out:
	if (base_fd >= 0)
		close(base_fd);
	free(owned_base);
	return rc;
}

int al_rundir_claim(al_rundir *rd, const char *run_id, al_error **err)
{
	if (!al_run_id_safe(run_id))
		return al_error_set(err, AL_ERR_UNAVAILABLE, EINVAL,
				    "workspace_setup_failed",
				    "the run id cannot name a directory");
	const char *slash = rd->root != NULL ? strrchr(rd->root, '/') : NULL;
	if (slash == NULL)
		return al_error_set(err, AL_ERR_UNAVAILABLE, EINVAL,
				    "workspace_setup_failed",
				    "no run directory to name");
	char *to = al_strdup_printf("%.*s/%s", (int)(slash - rd->root),
				    rd->root, run_id);
	if (to == NULL)
		return -ENOMEM;
	if (renameat2(AT_FDCWD, rd->root, AT_FDCWD, to, RENAME_NOREPLACE) <
	    0) {
		int e = errno;
		free(to);
		return al_error_set(err, AL_ERR_UNAVAILABLE, e,
				    "workspace_setup_failed",
				    "cannot create the run directory");
	}
	return set_paths(rd, to);
}

int al_rundir_create(const char *base, const char *run_id, al_rundir *out,
		     al_error **err)
{
	memset(out, 0, sizeof(*out));
	out->owner_fd = -1;
	if (!al_run_id_safe(run_id))
		return al_error_set(err, AL_ERR_UNAVAILABLE, EINVAL,
				    "workspace_setup_failed",
				    "the run id cannot name a directory");
	int rc = al_rundir_make(base, out, err);
	if (rc == 0 && (rc = al_rundir_claim(out, run_id, err)) < 0)
		al_rundir_remove(out);
	return rc;
}

int al_rundir_write_code(al_rundir *rd, const char *script_name,
			 const al_bytes *code, al_error **err)
{
	int rc = 0;
	char *path = al_strdup_printf("%s/%s", rd->code_dir, script_name);
	if (path == NULL)
		return -ENOMEM;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		      0444);
	if (fd < 0) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, errno,
				  "workspace_setup_failed",
				  "cannot write the code file");
		goto out;
	}
	size_t off = 0;
	while (off < code->len) {
		ssize_t n = write(fd, code->data + off, code->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = al_error_set(err, AL_ERR_UNAVAILABLE,
					  n < 0 ? errno : ENOSPC,
					  "workspace_no_space",
					  "cannot write the code file");
			goto out;
		}
		off += (size_t)n;
	}
	/* The program may read its code but not change it. */
	if (chmod(rd->code_dir, 0555) < 0) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, errno,
				  "workspace_setup_failed",
				  "cannot protect the code directory");
		goto out;
	}
	free(rd->script_path);
	rd->script_path = path;
	path = NULL;
out:
	if (fd >= 0)
		close(fd);
	free(path);
	return rc;
}

int al_rundir_materialise(al_rundir *rd, const al_bundle *b,
			  const al_manifest *m, bool inputs, uid_t uid,
			  gid_t gid, al_error **err)
{
	int code_fd = -1, ws_fd = -1, rc = 0;
	const al_bundle_item *code = al_bundle_item_at(b, 0);
	if (code == NULL || code->kind != AL_BUNDLE_CODE)
		return al_error_set(err, AL_ERR_UNAVAILABLE, EBADMSG,
				    "bundle_mismatch", "the bundle has no code");
	code_fd = open(rd->code_dir,
		       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (inputs)
		ws_fd = open(rd->workspace,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (code_fd < 0 || (inputs && ws_fd < 0)) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, errno,
				  "workspace_setup_failed",
				  "cannot open the run directory");
		goto out;
	}
	rc = al_bundle_materialise(b, m, code_fd, ws_fd, uid, gid, err);
	if (rc < 0)
		goto out;
	/* The program may read its code but not change it. */
	if (fchmod(code_fd, 0555) < 0) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, errno,
				  "workspace_setup_failed",
				  "cannot protect the code directory");
		goto out;
	}
	char *path = al_strdup_printf("%s/%s", rd->code_dir, code->path);
	if (path == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	free(rd->script_path);
	rd->script_path = path;
out:
	if (code_fd >= 0)
		close(code_fd);
	if (ws_fd >= 0)
		close(ws_fd);
	return rc;
}

int al_rundir_workspace_fd(const al_rundir *rd)
{
	int fd = open(rd->workspace,
		      O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* ---- removal ---------------------------------------------------------- */

/* Levels held open at once while removing; deeper directories are moved
 * up to the top and removed by a later pass. */
#define REMOVE_MAX_DEPTH 32
#define REMOVE_MAX_PASSES 1000000

/* Moves dfd/name up into topfd under a fresh name. */
static int move_up(int dfd, const char *name, int topfd)
{
	static unsigned seq;
	for (int tries = 0; tries < 64; tries++) {
		char tmp[64];
		snprintf(tmp, sizeof(tmp), ".al-deep-%d-%u", (int)getpid(),
			 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
		if (renameat2(dfd, name, topfd, tmp, RENAME_NOREPLACE) == 0)
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* Empties the directory dfd (depth levels below the top).  *moved counts
 * the subdirectories moved up to topfd; *failed whether something could
 * not be removed. */
static void empty_dir(int dfd, int topfd, int depth, unsigned *moved,
		      bool *failed)
{
	int lfd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
	if (d == NULL) {
		if (lfd >= 0)
			close(lfd);
		*failed = true;
		return;
	}
	/* The duplicate shares dfd's offset: an earlier pass left it at
	 * the end. */
	rewinddir(d);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		const char *n = de->d_name;
		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
			continue;
		/* The entry's type from the directory itself where the file
		 * system gives it; each call below refuses to follow a link,
		 * so an entry swapped meanwhile is only failed on. */
		bool is_dir = de->d_type == DT_DIR;
		struct stat st;
		if (de->d_type == DT_UNKNOWN) {
			if (fstatat(dfd, n, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			is_dir = S_ISDIR(st.st_mode);
		}
		if (!is_dir) {
			if (unlinkat(dfd, n, 0) < 0 && errno != ENOENT)
				*failed = true;
			continue;
		}
		/* Most are empty (a run's /tmp and /workspace are tmpfs
		 * mounts of their own): removed without being opened. */
		if (unlinkat(dfd, n, AT_REMOVEDIR) == 0 || errno == ENOENT)
			continue;
		if (depth + 1 >= REMOVE_MAX_DEPTH) {
			if (move_up(dfd, n, topfd) == 0)
				(*moved)++;
			else
				*failed = true;
			continue;
		}
		int cfd = openat(dfd, n,
				 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0) {
			*failed = true;
			continue;
		}
		/* The program may have left directories we cannot write;
		 * the descriptor is the directory itself, not a link. */
		(void)fchmod(cfd, 0700);
		empty_dir(cfd, topfd, depth + 1, moved, failed);
		close(cfd);
		if (unlinkat(dfd, n, AT_REMOVEDIR) < 0 && errno != ENOENT)
			*failed = true;
	}
	closedir(d);
}

int al_remove_tree_at(int parent_fd, const char *name)
{
	int dfd = openat(parent_fd, name,
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		if (errno == ENOENT)
			return 0;
		/* Not a directory (or a link): remove the entry itself. */
		if (unlinkat(parent_fd, name, 0) < 0 && errno != ENOENT)
			return -errno;
		return 0;
	}
	(void)fchmod(dfd, 0700);
	bool failed = false;
	for (int pass = 0; pass < REMOVE_MAX_PASSES; pass++) {
		unsigned moved = 0;
		failed = false;
		empty_dir(dfd, dfd, 0, &moved, &failed);
		if (moved == 0)
			break;
	}
	close(dfd);
	if (unlinkat(parent_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -errno;
	return failed ? -EIO : 0;
}

int al_remove_hidden_at(int parent_fd, const char *name)
{
	static unsigned seq;
	char gone[96];
	snprintf(gone, sizeof(gone), AL_GONE_PREFIX "%d-%u", (int)getpid(),
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	if (renameat(parent_fd, name, parent_fd, gone) < 0)
		return -errno;
	return al_remove_tree_at(parent_fd, gone);
}

int al_dir_names_at(int dir_fd, bool (*keep)(const char *name),
		    char ***names, size_t *n)
{
	*names = NULL;
	*n = 0;
	int lfd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
	DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
	if (d == NULL) {
		int e = errno;
		if (lfd >= 0)
			close(lfd);
		return -e;
	}
	/* The duplicate shares dir_fd's offset: an earlier listing left it
	 * at the end. */
	rewinddir(d);
	char **v = NULL;
	size_t k = 0, cap = 0;
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!keep(de->d_name))
			continue;
		if (k + 1 >= cap) {
			size_t nc = cap ? cap * 2 : 64;
			char **nv = realloc(v, nc * sizeof(*nv));
			if (nv == NULL) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
			cap = nc;
		}
		if ((v[k] = strdup(de->d_name)) == NULL) {
			rc = -ENOMEM;
			break;
		}
		v[++k] = NULL;
	}
	closedir(d);
	if (rc < 0) {
		al_strv_free(v, k);
		return rc;
	}
	*names = v;
	*n = k;
	return 0;
}

int al_rundir_set_aside(al_rundir *rd)
{
	const char *slash = rd->root != NULL ? strrchr(rd->root, '/') : NULL;
	char gone[64];
	if (slash == NULL || al_rundir_gone_name(gone, sizeof(gone)) < 0)
		return -EINVAL;
	char *to = NULL;
	if (asprintf(&to, "%.*s/%s", (int)(slash - rd->root), rd->root,
		     gone) < 0)
		return -ENOMEM;
	if (renameat2(AT_FDCWD, rd->root, AT_FDCWD, to, RENAME_NOREPLACE) <
	    0) {
		int e = errno;
		free(to);
		return -e;
	}
	free(rd->root);
	free(rd->code_dir);
	free(rd->workspace);
	free(rd->tmp);
	free(rd->script_path);
	rd->root = to;
	rd->code_dir = rd->workspace = rd->tmp = rd->script_path = NULL;
	return 0;
}

int al_rundir_remove(al_rundir *rd)
{
	int rc = 0;
	if (rd->root != NULL)
		rc = al_remove_tree_at(AT_FDCWD, rd->root);
	/* Released once the directory is gone (rundir_sweep.h). */
	if (rd->root != NULL && rd->owner_fd >= 0)
		close(rd->owner_fd);
	free(rd->root);
	free(rd->code_dir);
	free(rd->workspace);
	free(rd->tmp);
	free(rd->script_path);
	memset(rd, 0, sizeof(*rd));
	rd->owner_fd = -1; /* not fd 0: nothing is held any more */
	return rc;
}
