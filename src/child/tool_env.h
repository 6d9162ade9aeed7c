/* Internal: the toolbelt's variables in a run's environment
 * (docs/toolbelt.md, "Transport"). */
#ifndef AL_PROC_TOOL_ENV_H
#define AL_PROC_TOOL_ENV_H

#include <stddef.h>

#include "child/env.h"

/* Entries al_tool_env_add may add. */
#define AL_TOOL_ENV_MAX 4

/* Takes ownership of entry (NULL: out of memory) and replaces an entry
 * of the same name. */
typedef int (*al_env_put_fn)(void *ctx, char *entry);

/* When the run has a toolbelt (exec->tool_dir and base->tool_dir):
 * AIRLOCK_TOOL_SOCKET, AIRLOCK_TOOL_TOKEN_FILE, AIRLOCK_TOOL_TOKEN, and
 * base->tool_bin_dir put first on path (the run's PATH so far).  Without
 * one, none of them. */
int al_tool_env_add(const al_env_base *base, const al_exec *exec,
		    const char *path, al_env_put_fn put, void *ctx);

#endif
