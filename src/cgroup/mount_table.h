/* Internal: the cgroup file systems mounted in this process's mount
 * namespace, as /proc/self/mountinfo lists them.  The table is parsed
 * once and again only after the kernel reports a change of the mount
 * table (mountinfo's descriptor polls POLLPRI after any mount, unmount or
 * remount in the namespace), so a daemon locating its cgroups for each
 * request reads it once rather than per request. */
#ifndef AL_CGROUP_MOUNT_TABLE_H
#define AL_CGROUP_MOUNT_TABLE_H

#include <stdbool.h>

typedef struct al_cg_mount {
	const char *mnt;       /* mount point */
	const char *root;      /* the mount's root within its hierarchy */
	const char *superopts; /* v1: the controllers, comma-separated */
	bool v2;	       /* cgroup2, else a v1 hierarchy */
} al_cg_mount;

/* Calls fn for each cgroup mount, in mountinfo's order, under the table's
 * lock (fn must not call back in).  Unreadable mountinfo: no call. */
void al_cg_mounts_each(void (*fn)(const al_cg_mount *m, void *ctx),
		       void *ctx);

#endif
