/* Internal: the clean environment of a run, in layers (docs/host.md,
 * "The run's environment"): a sanitized baseline (PATH, HOME, TMPDIR,
 * LANG, and this process's LANG, LC_*, TZ and TERM when their values are
 * plain), the request's variables, the host's (pass_env and secrets), and
 * last the trusted AIRLOCK_* variables and PATH, which nothing overrides. */
#ifndef AL_CHILD_ENV_H
#define AL_CHILD_ENV_H

#include <stdbool.h>

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
	 * (child/tool_env.h). */
	const char *tool_dir;
	const char *tool_bin_dir;
} al_env_base;

/* Longest baseline value (LANG, LC_*, TZ, TERM) kept. */
#define AL_ENV_BASELINE_MAX 128u
/* true when a baseline value is plain: 1..AL_ENV_BASELINE_MAX bytes of
 * A-Z a-z 0-9 . _ - @ + : / , and no "..". */
bool al_env_baseline_value_ok(const char *v);

/* The PATH value of a run: the interpreter's own directory first (so its
 * tools resolve), then /usr/local/bin:/usr/bin:/bin.  Caller frees. */
char *al_env_path_for(const char *interpreter_path);

/* The baseline layer alone (what an interpreter started before its run
 * is known sees: the sandbox's warm members); free with al_env_free. */
int al_env_baseline(const al_env_base *base, char ***out);
/* NULL-terminated "NAME=value" vector; free with al_env_free. */
int al_env_build(const al_env_base *base, const al_exec *exec, char ***out);
void al_env_free(char **env);

#endif
