/* Internal: the toolbelt in a sandbox (docs/toolbelt.md): the directories
 * are bound read-only by the mount plan (mounts.h); the token file must
 * be readable by the run's own uid. */
#ifndef AL_SANDBOX_TOOL_MOUNT_H
#define AL_SANDBOX_TOOL_MOUNT_H

#include <sys/types.h>

/* Gives tool_dir/token to uid (its gid the same), mode 0600.  0 or a
 * negative errno. */
int al_sb_tool_own(const char *tool_dir, uid_t uid);

#endif
