/* Internal: user namespace id maps and uid slots. */
#ifndef AL_SANDBOX_USERNS_H
#define AL_SANDBOX_USERNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Maps uid/gid 0 inside the user namespace of process `pid` (0: the
 * caller) to one host uid/gid, with setgroups denied.  Async-signal-safe. */
int al_sb_write_idmaps(pid_t pid, uid_t host_uid, gid_t host_gid);

/* Host uids for runs: one per concurrent run in this process, so runs
 * cannot signal or read each other's processes and files.  The set of
 * taken uids is process-wide (every handle and probe shares it). */
int al_sb_uid_take(uint32_t base, uint32_t count, uid_t *uid);
void al_sb_uid_give(uid_t uid);

#endif
