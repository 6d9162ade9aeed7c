/* The cgroup v1 manager: limits and usage in the per-controller
 * hierarchies (memory, pids, cpuacct). */
#include <stdbool.h>

#include "cgroup/cgfs.h"
#include "cgroup/manager.h"

static int limit_memory(const char *d, uint64_t bytes)
{
	int rc = al_cgfs_write_u64(d, "memory.limit_in_bytes", bytes);
	if (rc == 0 && al_cgfs_exists(d, "memory.memsw.limit_in_bytes"))
		rc = al_cgfs_write_u64(d, "memory.memsw.limit_in_bytes", bytes);
	return rc;
}

/* v1 refuses limit_in_bytes above memsw.limit_in_bytes: when raising,
 * memsw goes first; when lowering, the plain limit does. */
static int relimit_memory(const char *d, uint64_t bytes)
{
	bool memsw = al_cgfs_exists(d, "memory.memsw.limit_in_bytes");
	uint64_t cur = 0;
	bool raising = al_cgfs_read_u64(d, "memory.limit_in_bytes", &cur) &&
		       bytes > cur;
	int rc = 0;
	if (memsw && raising)
		rc = al_cgfs_write_u64(d, "memory.memsw.limit_in_bytes", bytes);
	if (rc == 0)
		rc = al_cgfs_write_u64(d, "memory.limit_in_bytes", bytes);
	if (rc == 0 && memsw && !raising)
		rc = al_cgfs_write_u64(d, "memory.memsw.limit_in_bytes", bytes);
	return rc;
}

static int limit_pids(const char *dir, uint64_t pids)
{
	return al_cgfs_write_u64(dir, "pids.max", pids);
}

/* cpuacct only where there is no unified cgroup, whose cpu.stat says
 * the same. */
static size_t usage_files(const al_sb_cgrun *run, const char **dirs,
			  const char **files, size_t cap)
{
	const char *mem = run->v1_dir[AL_CG_MEMORY];
	const char *pids = run->v1_dir[AL_CG_PIDS];
	const char *cpu = run->v2_dir == NULL ? run->v1_dir[AL_CG_CPU] : NULL;
	const char *pairs[][2] = {
		{mem, "memory.max_usage_in_bytes"},
		{mem, "memory.oom_control"},
		{pids, "pids.events"},
		{cpu, "cpuacct.usage_user"},
		{cpu, "cpuacct.usage_sys"},
	};
	size_t n = 0;
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]) && n < cap;
	     i++) {
		if (pairs[i][0] == NULL)
			continue;
		dirs[n] = pairs[i][0];
		files[n++] = pairs[i][1];
	}
	return n;
}

static void usage(const al_sb_cgrun *run, al_sb_cgusage *u)
{
	uint64_t v;
	const char *mem = run->v1_dir[AL_CG_MEMORY];
	if (mem) {
		if (al_cg_read_u64(run, mem, "memory.max_usage_in_bytes", &v)) {
			u->have_peak = true;
			u->peak_memory_bytes = v;
		}
		if (al_cg_read_key(run, mem, "memory.oom_control", "oom_kill",
				   &v) &&
		    v > 0)
			u->oom_killed = true;
	}
	const char *pids = run->v1_dir[AL_CG_PIDS];
	if (pids && al_cg_read_key(run, pids, "pids.events", "max", &v) &&
	    v > 0)
		u->pids_max_hit = true;
	const char *cpu = run->v1_dir[AL_CG_CPU];
	if (!u->have_cpu && cpu) {
		uint64_t us, sy;
		if (al_cg_read_u64(run, cpu, "cpuacct.usage_user", &us) &&
		    al_cg_read_u64(run, cpu, "cpuacct.usage_sys", &sy)) {
			u->have_cpu = true;
			u->cpu_user_us = us / 1000;
			u->cpu_sys_us = sy / 1000;
		}
	}
}

const al_cg_manager al_cg_v1 = {
	.name = "v1",
	.trial_file = {[AL_CG_MEMORY] = "memory.limit_in_bytes",
		       [AL_CG_PIDS] = "pids.max"},
	.limit_memory = limit_memory,
	.relimit_memory = relimit_memory,
	.limit_pids = limit_pids,
	.usage = usage,
	.usage_files = usage_files,
};
