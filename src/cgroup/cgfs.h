/* Internal to src/cgroup: reading and writing cgroup files, shared by the
 * managers, discovery and the durable run's tree. */
#ifndef AL_CGROUP_CGFS_H
#define AL_CGROUP_CGFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* -errno, never 0: a failed call that left errno unset still fails. */
int al_cgfs_neg_errno(void);
/* dir/file := val.  A NULL dir is a controller this run has no cgroup
 * for: refused (-EINVAL), never formatted as "(null)" into a path
 * relative to the cwd. */
int al_cgfs_write(const char *dir, const char *file, const char *val);
int al_cgfs_write_u64(const char *dir, const char *file, uint64_t v);
/* Reads up to len-1 bytes; buf is always a string, "" on failure. */
int al_cgfs_read(const char *dir, const char *file, char *buf, size_t len);
bool al_cgfs_exists(const char *dir, const char *file);
/* The value of a "key value" line (memory.events, cpu.stat, ...). */
bool al_cgfs_read_key(const char *dir, const char *file, const char *key,
		      uint64_t *out);
bool al_cgfs_read_u64(const char *dir, const char *file, uint64_t *out);
/* The parsing halves of the two above, on a file's text. */
bool al_cgfs_find_key(const char *text, const char *key, uint64_t *out);
bool al_cgfs_parse_u64(const char *text, uint64_t *out);
/* true when word is one of list's items, separated by any of seps. */
bool al_cgfs_list_has(const char *list, const char *word, const char *seps);
/* rmdir, retried briefly while the kernel lets the last tasks go.  0,
 * -EBUSY when it stayed, or another -errno. */
int al_cgfs_rmdir_retry(const char *dir);
/* Without cgroup.kill: SIGKILL to every pid listed in dir's cgroup.procs
 * and in its descendants'. */
void al_cgfs_kill_listed(const char *dir);
/* The unified (v2) hierarchy's mount: /sys/fs/cgroup/unified on hybrid
 * systems, /sys/fs/cgroup on pure v2 ones; NULL when none. */
const char *al_cgfs_unified_mount(void);
/* This process's cgroup in the unified hierarchy, as an absolute path
 * (malloc'd); NULL when there is none or on allocation failure. */
char *al_cgfs_self_unified(void);

#endif
