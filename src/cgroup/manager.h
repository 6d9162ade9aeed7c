/* Internal to src/cgroup: what differs between cgroup v1 and v2, one
 * manager per version (v1.c, v2.c).  cgroup.c picks the manager of each
 * controller by where discovery found it usable, so a hybrid machine uses
 * both at once (memory on v1, the unified tree for kill and cpu.stat). */
#ifndef AL_CGROUP_MANAGER_H
#define AL_CGROUP_MANAGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup/cgroup.h"

typedef struct al_cg_manager {
	const char *name; /* "v1", "v2" */
	/* The file a trial writes to tell that a controller can be limited
	 * in a fresh child (NULL: creating the child is the test). */
	const char *trial_file[AL_CG__N];
	/* The memory limit, with swap off where the version has a knob. */
	int (*limit_memory)(const char *dir, uint64_t bytes);
	/* The same on a cgroup that holds processes already. */
	int (*relimit_memory)(const char *dir, uint64_t bytes);
	int (*limit_pids)(const char *dir, uint64_t pids);
	/* Adds what the version's files of the run's cgroups report; v2 goes
	 * first, v1 only fills what is still missing or knows better. */
	void (*usage)(const al_sb_cgrun *run, al_sb_cgusage *u);
	/* The files usage reads, as (dir, file) pairs into dirs and files
	 * (room for cap); returns how many. */
	size_t (*usage_files)(const al_sb_cgrun *run, const char **dirs,
			      const char **files, size_t cap);
} al_cg_manager;

/* Closes what al_sb_cgrun_keep_reads kept (reads.c). */
void al_cg_reads_drop(al_sb_cgrun *run);
/* The descriptor kept open for dir/file, or -1 (not kept, or absent). */
int al_cg_kept_fd(const al_sb_cgrun *run, const char *dir, const char *file);
/* dir/file of one of the run's cgroups, from the descriptor kept open
 * (al_sb_cgrun_keep_reads) when there is one, else by path; as
 * al_cgfs_read (-ENOENT for a file kept as absent). */
int al_cg_read(const al_sb_cgrun *run, const char *dir, const char *file,
	       char *buf, size_t len);
/* The same, parsed: a "key value" line's value, or the whole file as a
 * number. */
bool al_cg_read_key(const al_sb_cgrun *run, const char *dir,
		    const char *file, const char *key, uint64_t *out);
bool al_cg_read_key2(const al_sb_cgrun *run, const char *dir,
		     const char *file, const char *key1, uint64_t *out1,
		     const char *key2, uint64_t *out2);
bool al_cg_read_u64(const al_sb_cgrun *run, const char *dir,
		    const char *file, uint64_t *out);

extern const al_cg_manager al_cg_v1;
extern const al_cg_manager al_cg_v2;

#endif
