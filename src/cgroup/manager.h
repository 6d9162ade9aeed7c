/* Internal to src/cgroup: what differs between cgroup v1 and v2, one
 * manager per version (v1.c, v2.c).  cgroup.c picks the manager of each
 * controller by where discovery found it usable, so a hybrid machine uses
 * both at once (memory on v1, the unified tree for kill and cpu.stat). */
#ifndef AL_CGROUP_MANAGER_H
#define AL_CGROUP_MANAGER_H

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
} al_cg_manager;

extern const al_cg_manager al_cg_v1;
extern const al_cg_manager al_cg_v2;

#endif
