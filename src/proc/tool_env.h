/* Internal: the toolbelt's variables in a run's environment
 * (docs/toolbelt.md, "Transport"). */
#ifndef AL_PROC_TOOL_ENV_H
#define AL_PROC_TOOL_ENV_H

#include <stddef.h>

#include "proc/env.h"

/* Entries al_tool_env_add may add. */
#define AL_TOOL_ENV_MAX 4

typedef int (*al_env_put_fn)(char **env, size_t *n, char *entry);

/* When the run has a toolbelt (exec->tool_dir and base->tool_dir):
 * AIRLOCK_TOOL_SOCKET, AIRLOCK_TOOL_TOKEN_FILE, AIRLOCK_TOOL_TOKEN, and
 * base->tool_bin_dir first on the PATH already in env.  Without one,
 * none of them.  put replaces an entry of the same name. */
int al_tool_env_add(const al_env_base *base, const al_exec *exec, char **env,
		    size_t *n, al_env_put_fn put);

#endif
