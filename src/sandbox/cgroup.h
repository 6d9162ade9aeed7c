/* Internal: the sandbox's cgroups, per controller on v2 or v1.
 *
 * Discovery (once per handle) finds, for each controller, a hierarchy
 * where a child of our own cgroup can be created and limited: v2 when the
 * controller is enabled beneath our cgroup in the unified hierarchy, else
 * its v1 hierarchy.  The unified hierarchy is also used, even without
 * controllers, for cgroup.kill, cgroup.events and cpu.stat.  Only cgroups
 * created here are ever written to or removed. */
#ifndef AL_SANDBOX_CGROUP_H
#define AL_SANDBOX_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <airlock/contract.h>
#include <airlock/error.h>

enum al_sb_ctrl { AL_CG_MEMORY = 0, AL_CG_PIDS, AL_CG_CPU, AL_CG__N };

typedef enum al_sb_cgver { AL_CG_NONE = 0, AL_CG_V1, AL_CG_V2 } al_sb_cgver;

typedef struct al_sb_cgroups {
	char *v2_base;		    /* our cgroup in the unified tree, or NULL */
	bool v2_kill;		    /* cgroup.kill usable in v2_base's children */
	al_sb_cgver ver[AL_CG__N];  /* where each controller is used */
	char *v1_base[AL_CG__N];    /* our cgroup in the controller's v1 tree */
} al_sb_cgroups;

/* Finds the hierarchies and checks each by creating (and removing) a test
 * child; a controller whose child cannot be created or limited stays
 * AL_CG_NONE.  Never fails for "not available". */
void al_sb_cgroups_discover(al_sb_cgroups *cg);
void al_sb_cgroups_clear(al_sb_cgroups *cg);
const char *al_sb_cgver_name(al_sb_cgver v);

typedef struct al_sb_cgrun {
	char *v2_dir;		/* created unified cgroup, or NULL */
	int v2_fd;		/* O_DIRECTORY fd of v2_dir for CLONE_INTO_CGROUP */
	char *v1_dir[AL_CG__N]; /* created v1 cgroups (NULL when none) */
} al_sb_cgrun;

/* Creates the run's cgroups named `name` and writes the limits that are
 * set (memory_bytes with swap off, pids).  Never leaves a partial set. */
int al_sb_cgrun_create(const al_sb_cgroups *cg, const char *name,
		       const al_limits *limits, al_sb_cgrun *run,
		       al_error **err);
/* Moves pid into every v1 cgroup (and into v2 when it was not cloned
 * there). */
int al_sb_cgrun_attach(const al_sb_cgrun *run, pid_t pid, bool in_v2);
/* Kills every process in the run's cgroups (cgroup.kill; else SIGKILL to
 * each listed pid). */
void al_sb_cgrun_kill(const al_sb_cgrun *run);
/* true when no process is left in any of the run's cgroups. */
bool al_sb_cgrun_empty(const al_sb_cgrun *run);

typedef struct al_sb_cgusage {
	bool have_cpu;
	uint64_t cpu_user_us, cpu_sys_us;
	bool have_peak;
	uint64_t peak_memory_bytes;
	bool oom_killed;
	bool pids_max_hit;
} al_sb_cgusage;

void al_sb_cgrun_usage(const al_sb_cgrun *run, al_sb_cgusage *u);
/* Removes the run's cgroups (retrying briefly while the kernel lets the
 * last tasks go).  Returns 0 or -EBUSY when one could not be removed. */
int al_sb_cgrun_destroy(al_sb_cgrun *run);

#endif
