/* A run's private directory on the host (see rundir.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "proc/rundir.h"

/* The base must be a real directory of ours that nobody else can write:
 * otherwise another user could pre-create or swap run directories. */
static int ensure_private_dir(const char *path, al_error **err)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return al_error_set(err, AL_ERR_UNAVAILABLE, errno,
				    "workspace_setup_failed",
				    "cannot create the run base directory");
	struct stat st;
	if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 0077) != 0)
		return al_error_set(err, AL_ERR_UNAVAILABLE, EPERM,
				    "workspace_setup_failed",
				    "the run base directory is not private");
	return 0;
}

int al_rundir_create(const char *base, const char *run_id, al_rundir *out,
		     al_error **err)
{
	char *owned_base = NULL;
	int rc = 0;

	memset(out, 0, sizeof(*out));
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
	rc = ensure_private_dir(base, err);
	if (rc < 0)
		goto out;
	out->root = al_strdup_printf("%s/%s", base, run_id);
	out->code_dir = al_strdup_printf("%s/code", out->root ? out->root : "");
	out->workspace =
		al_strdup_printf("%s/workspace", out->root ? out->root : "");
	out->tmp = al_strdup_printf("%s/tmp", out->root ? out->root : "");
	if (!out->root || !out->code_dir || !out->workspace || !out->tmp) {
		rc = -ENOMEM;
		goto fail;
	}
	if (mkdir(out->root, 0700) < 0) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, errno,
				  "workspace_setup_failed",
				  "cannot create the run directory");
		goto fail;
	}
	if (mkdir(out->code_dir, 0700) < 0 || mkdir(out->workspace, 0700) < 0 ||
	    mkdir(out->tmp, 0700) < 0) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, errno,
				  "workspace_setup_failed",
				  "cannot lay out the run directory");
		al_rundir_remove(out);
		goto out;
	}
	goto out;
fail:
	free(out->root);
	free(out->code_dir);
	free(out->workspace);
	free(out->tmp);
	memset(out, 0, sizeof(*out));
out:
	free(owned_base);
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

int al_remove_tree_at(int parent_fd, const char *name)
{
	int dfd = openat(parent_fd, name,
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		/* Not a directory (or a link): remove the entry itself. */
		if (unlinkat(parent_fd, name, 0) < 0 && errno != ENOENT)
			return -errno;
		return 0;
	}
	/* The program may have left directories without write permission. */
	fchmod(dfd, 0700);
	DIR *d = fdopendir(dfd);
	if (d == NULL) {
		close(dfd);
		return -errno;
	}
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode))
			al_remove_tree_at(dirfd(d), de->d_name);
		else
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
	if (unlinkat(parent_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int al_rundir_remove(al_rundir *rd)
{
	int rc = 0;
	if (rd->root != NULL)
		rc = al_remove_tree_at(AT_FDCWD, rd->root);
	free(rd->root);
	free(rd->code_dir);
	free(rd->workspace);
	free(rd->tmp);
	free(rd->script_path);
	memset(rd, 0, sizeof(*rd));
	return rc;
}
