/* The files of a run's cgroups kept open for the reads after the run,
 * and the v1 `tasks` files its init joins by (al_sb_cgrun_keep_reads in
 * cgroup.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup/cgfs.h"
#include "cgroup/manager.h"

/* Each hierarchy's cgroup.procs and tasks, and the usage files of both
 * managers. */
#define READS_MAX 20
#define FD_ABSENT (-2)

typedef struct kept_file {
	const char *dir; /* one of the run's own strings: compared as such */
	const char *file;
	int fd;		 /* FD_ABSENT: the file does not exist */
} kept_file;

struct al_sb_cgreads {
	size_t n;
	kept_file f[READS_MAX];
};

static void reads_free(struct al_sb_cgreads *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n; i++)
		if (r->f[i].fd >= 0)
			close(r->f[i].fd);
	free(r);
}

void al_cg_reads_drop(al_sb_cgrun *run)
{
	reads_free(run->reads);
	run->reads = NULL;
}

/* Opens dir/file (with flags) into the next slot; a file that is not
 * there is kept as absent. */
static int keep(struct al_sb_cgreads *r, const char *dir, const char *file,
		int flags)
{
	if (dir == NULL)
		return 0;
	for (size_t i = 0; i < r->n; i++)
		if (r->f[i].dir == dir && strcmp(r->f[i].file, file) == 0)
			return 0;
	if (r->n == READS_MAX)
		return -ENOSPC;
	char path[4096];
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	int fd = open(path, flags | O_CLOEXEC);
	if (fd < 0 && errno != ENOENT)
		return al_cgfs_neg_errno();
	r->f[r->n++] = (kept_file){dir, file, fd < 0 ? FD_ABSENT : fd};
	return 0;
}

int al_sb_cgrun_keep_reads(al_sb_cgrun *run)
{
	if (run->reads != NULL)
		return 0;
	struct al_sb_cgreads *r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	/* Not v1's cgroup.procs: v1 answers it from a pid list cached with
	 * the open file for a second after each read, so a second read
	 * through one descriptor can say what was there before. */
	int rc = keep(r, run->v2_dir, "cgroup.procs", O_RDONLY);
	/* the init writes itself into these (al_sb_cgrun_open_tasks) */
	for (int i = 0; rc == 0 && i < AL_CG__N; i++)
		rc = keep(r, run->v1_dir[i], "tasks", O_WRONLY);
	const al_cg_manager *m[] = {&al_cg_v2, &al_cg_v1};
	for (size_t k = 0; rc == 0 && k < sizeof(m) / sizeof(m[0]); k++) {
		const char *dirs[READS_MAX], *files[READS_MAX];
		size_t n = m[k]->usage_files(run, dirs, files, READS_MAX);
		for (size_t i = 0; rc == 0 && i < n; i++)
			rc = keep(r, dirs[i], files[i], O_RDONLY);
	}
	if (rc < 0) {
		reads_free(r);
		return rc;
	}
	run->reads = r;
	return 0;
}

int al_cg_kept_fd(const al_sb_cgrun *run, const char *dir, const char *file)
{
	const struct al_sb_cgreads *r = run->reads;
	for (size_t i = 0; r != NULL && i < r->n; i++)
		if (r->f[i].dir == dir && strcmp(r->f[i].file, file) == 0)
			return r->f[i].fd >= 0 ? r->f[i].fd : -1;
	return -1;
}

int al_cg_read(const al_sb_cgrun *run, const char *dir, const char *file,
	       char *buf, size_t len)
{
	const struct al_sb_cgreads *r = run->reads;
	for (size_t i = 0; r != NULL && i < r->n; i++) {
		if (r->f[i].dir != dir || strcmp(r->f[i].file, file) != 0)
			continue;
		buf[0] = '\0';
		if (r->f[i].fd == FD_ABSENT)
			return -ENOENT;
		ssize_t got = pread(r->f[i].fd, buf, len - 1, 0);
		if (got < 0)
			return al_cgfs_neg_errno();
		buf[got] = '\0';
		return 0;
	}
	return al_cgfs_read(dir, file, buf, len);
}

bool al_cg_read_key(const al_sb_cgrun *run, const char *dir,
		    const char *file, const char *key, uint64_t *out)
{
	char buf[4096];
	return al_cg_read(run, dir, file, buf, sizeof(buf)) == 0 &&
	       al_cgfs_find_key(buf, key, out);
}

bool al_cg_read_key2(const al_sb_cgrun *run, const char *dir,
		     const char *file, const char *key1, uint64_t *out1,
		     const char *key2, uint64_t *out2)
{
	char buf[4096];
	return al_cg_read(run, dir, file, buf, sizeof(buf)) == 0 &&
	       al_cgfs_find_key(buf, key1, out1) &&
	       al_cgfs_find_key(buf, key2, out2);
}

bool al_cg_read_u64(const al_sb_cgrun *run, const char *dir,
		    const char *file, uint64_t *out)
{
	char buf[64];
	return al_cg_read(run, dir, file, buf, sizeof(buf)) == 0 &&
	       al_cgfs_parse_u64(buf, out);
}
