/* Internal: the clean environment of a run.  Nothing comes from the host:
 * PATH, HOME, LANG, TMPDIR, AIRLOCK_RUN_ID, AIRLOCK_RUN_TEMP (and the
 * inbox variables when the run has one), then the
 * request's variables, then the host's resolved secrets (later entries
 * replace earlier ones of the same name). */
#ifndef AL_PROC_ENV_H
#define AL_PROC_ENV_H

#include <airlock/provider.h>

typedef struct al_env_base {
	const char *path;     /* PATH value */
	const char *home;     /* HOME */
	const char *tmpdir;   /* TMPDIR and AIRLOCK_RUN_TEMP */
	/* AIRLOCK_INBOX / AIRLOCK_INBOX_ACKS as the program sees them;
	 * NULL: not set. */
	const char *inbox;
	const char *inbox_acks;
	/* The toolbelt's directories as the program sees them (the socket
	 * and token file; the command), or NULL: not shown
	 * (proc/tool_env.h). */
	const char *tool_dir;
	const char *tool_bin_dir;
} al_env_base;

/* The PATH value of a run: the interpreter's own directory first (so its
 * tools resolve), then /usr/local/bin:/usr/bin:/bin.  Caller frees. */
char *al_env_path_for(const char *interpreter_path);

/* NULL-terminated "NAME=value" vector; free with al_env_free. */
int al_env_build(const al_env_base *base, const al_exec *exec, char ***out);
void al_env_free(char **env);

#endif
