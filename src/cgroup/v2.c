/* The cgroup v2 manager: limits and usage in the unified hierarchy. */
#include "cgroup/cgfs.h"
#include "cgroup/manager.h"

static int limit_memory(const char *dir, uint64_t bytes)
{
	int rc = al_cgfs_write_u64(dir, "memory.max", bytes);
	if (rc == 0 && al_cgfs_exists(dir, "memory.swap.max"))
		rc = al_cgfs_write(dir, "memory.swap.max", "0");
	return rc;
}

static int limit_pids(const char *dir, uint64_t pids)
{
	return al_cgfs_write_u64(dir, "pids.max", pids);
}

/* cpu.stat exists in every unified cgroup, controllers or not; the
 * memory and pids files only where that controller is on v2 (a
 * controller bound to a v1 hierarchy is not, and opening files that
 * cannot exist costs a run a path walk each). */
static size_t usage_files(const al_sb_cgrun *run, const char **dirs,
			  const char **files, size_t cap)
{
	const char *d = run->v2_dir;
	const char *want[4];
	size_t n = 0, k = 0;
	if (d == NULL)
		return 0;
	want[k++] = "cpu.stat";
	if (run->v1_dir[AL_CG_MEMORY] == NULL) {
		want[k++] = "memory.peak";
		want[k++] = "memory.events";
	}
	if (run->v1_dir[AL_CG_PIDS] == NULL)
		want[k++] = "pids.events";
	for (size_t i = 0; i < k && n < cap; i++, n++) {
		dirs[n] = d;
		files[n] = want[i];
	}
	return n;
}

static void usage(const al_sb_cgrun *run, al_sb_cgusage *u)
{
	uint64_t v;
	const char *d = run->v2_dir;
	if (d == NULL)
		return;
	if (al_cg_read_key2(run, d, "cpu.stat", "user_usec", &u->cpu_user_us,
			    "system_usec", &u->cpu_sys_us))
		u->have_cpu = true;
	if (run->v1_dir[AL_CG_MEMORY] == NULL) {
		if (al_cg_read_u64(run, d, "memory.peak", &v)) {
			u->have_peak = true;
			u->peak_memory_bytes = v;
		}
		if (al_cg_read_key(run, d, "memory.events", "oom_kill", &v) &&
		    v > 0)
			u->oom_killed = true;
	}
	if (run->v1_dir[AL_CG_PIDS] == NULL &&
	    al_cg_read_key(run, d, "pids.events", "max", &v) && v > 0)
		u->pids_max_hit = true;
}

const al_cg_manager al_cg_v2 = {
	.name = "v2",
	.trial_file = {[AL_CG_MEMORY] = "memory.max", [AL_CG_PIDS] = "pids.max"},
	.limit_memory = limit_memory,
	/* memory.max may be lowered or raised on a live cgroup alike */
	.relimit_memory = limit_memory,
	.limit_pids = limit_pids,
	.usage = usage,
	.usage_files = usage_files,
};
