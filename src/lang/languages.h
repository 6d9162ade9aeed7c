/* Internal: the languages table and toolchain observation.
 *
 * One row per language: canonical toolchain id, how the interpreter is found
 * on PATH and versioned (run it, parse a normalised version), the file name
 * the code is written to, and the argv plan.  Observation resolves
 * version-manager shims to the real interpreter by asking the interpreter
 * for its own executable.
 */
#ifndef AL_LANG_LANGUAGES_H
#define AL_LANG_LANGUAGES_H

#include <stdbool.h>
#include <stddef.h>

#include <airlock/error.h>

/* What was observed about one language's toolchain on this host. */
typedef struct al_toolchain {
	char *language;	 /* "python" */
	char *toolchain; /* canonical id: "python", "node", "ruby", ... */
	char *version;	 /* normalised "3.11.7" */
	char *path;	 /* absolute path of the real interpreter (no shim) */
	/* Directories the toolchain needs readable besides the standard
	 * system dirs (/usr, /lib*, /bin, /sbin, /etc essentials): e.g. the
	 * interpreter's own prefix under a version manager.  Absolute,
	 * canonical, NULL-terminated. */
	char **extra_roots;
	/* Helper program used by the plan's build step (TypeScript's
	 * transpiler), absolute; NULL when none. */
	char *helper_path;
} al_toolchain;

void al_toolchain_free(al_toolchain *tc);

/* One step of a plan: argv[0] is an absolute path. NULL-terminated. */
typedef struct al_plan {
	char **build_argv; /* NULL when the language needs no build step */
	char **run_argv;
} al_plan;

void al_plan_free(al_plan *plan);

/* NULL-terminated list of every language name in the table. */
const char *const *al_language_names(void);
bool al_language_known(const char *language);
/* File name the code is written to inside the run directory: "main.py". */
const char *al_language_script_name(const char *language);

/* Observes the toolchain of `language` using search path `path_env`
 * (a PATH value; NULL means the process's PATH, then a default of
 * /usr/local/bin:/usr/bin:/bin).  Results are cached in-process and on
 * disk (cache_dir, may be NULL) keyed by the interpreter's identity
 * (device, inode, size, mtime), so a changed binary is re-observed.
 * Returns 0 and *out, -ENOENT with *out NULL when the toolchain is absent
 * (err says why), another negative errno on failure. */
int al_toolchain_observe(const char *language, const char *path_env,
			 const char *cache_dir, al_toolchain **out,
			 al_error **err);

/* Builds the argv plan to run the script at script_path (absolute, as the
 * program will see it) with the request's arguments.  Never passes code on
 * a command line.  out_js_path: for a build step, where its output goes
 * (computed next to script_path). */
int al_toolchain_plan(const al_toolchain *tc, const char *script_path,
		      char *const *args, size_t nargs, al_plan *out,
		      al_error **err);

/* Compares a normalised version with a constraint ("3.11.2" exact,
 * ">=3.10", ">3", "<=4.1", "<4", "==3.11", "3.11" prefix match).
 * Returns 1 satisfied, 0 not, -EINVAL for a malformed constraint. */
int al_version_satisfies(const char *version, const char *constraint);

#endif
