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
#include <stdint.h>

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
	/* "NAME=value" the build step needs besides the run's environment
	 * (go's caches in the sandbox's /tmp); NULL when none. */
	char **build_env;
} al_plan;

/* What a compiled plan takes from the request. */
typedef struct al_plan_opts {
	uint64_t run_memory_bytes;   /* the run's memory limit, 0: none (java -Xmx) */
	uint64_t build_memory_bytes; /* the build's (javac -J-Xmx) */
	char *const *flags;	     /* request build_flags, checked */
	size_t n_flags;
} al_plan_opts;

void al_plan_free(al_plan *plan);

/* NULL-terminated list of every language name in the table. */
const char *const *al_language_names(void);
bool al_language_known(const char *language);
/* File name the code is written to inside the run directory: "main.py". */
const char *al_language_script_name(const char *language);
/* The language compiles its code before the run (c, cpp, go, rust, java). */
bool al_language_compiled(const char *language);
/* A small program that builds and exits 0 (the sandbox's trial run), or
 * NULL when an empty file does. */
const char *al_language_trial_code(const char *language);

/* Checks a request's build flags against the language's allow-list
 * (docs/languages.md): -EINVAL with AL_ERR_INVALID_REQUEST, reason
 * "build_flags", for any other flag, a language without a build step, or
 * more than AL_MAX_BUILD_FLAGS. */
#define AL_MAX_BUILD_FLAGS 16
int al_build_flags_check(const char *language, char *const *flags, size_t n,
			 al_error **err);

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

/* Forgets the in-process cache and PATH lookups (the disk cache stays). */
void al_toolchain_cache_reset(void);

/* Builds the argv plan to run the script at script_path (absolute, as the
 * program will see it) with the request's arguments (an empty string stays
 * an argument).  Never passes code on a command line.  build_dir: where a
 * build step writes its output, as the program sees it (the run's tmp dir:
 * the code directory is read-only); required only when the plan has a
 * build step (TypeScript through esbuild), else may be NULL. */
int al_toolchain_plan(const al_toolchain *tc, const char *script_path,
		      const char *build_dir, char *const *args, size_t nargs,
		      al_plan *out, al_error **err);
/* The same with the request's build options (opts may be NULL).  A
 * compiled language always has a build step writing into build_dir; its
 * run step starts the artifact there (java: the JDK's java on the
 * classes). */
int al_toolchain_plan_with(const al_toolchain *tc, const char *script_path,
			   const char *build_dir, char *const *args,
			   size_t nargs, const al_plan_opts *opts, al_plan *out,
			   al_error **err);

/* Extracts a normalised dotted version ("3.11.7", "20.20.2", "5.2.15")
 * from an interpreter's version text ("Python 3.11.7", "v20.20.2",
 * "GNU bash, version 5.2.15(1)-release ...", "ruby 3.1.2p20 ...").  The
 * first run of at least two dot-separated numbers that starts a word (or
 * follows a "v") wins.  Returns 0, -EINVAL when none, -ERANGE when it does
 * not fit in outsz. */
int al_version_parse(const char *text, char *out, size_t outsz);

/* Compares a normalised version with a constraint: a comma-separated
 * conjunction (">=3.10,<4") of clauses "==V" (equal, missing components
 * count as 0), ">=V", ">V", "<=V", "<V", or a bare "V" (prefix match:
 * "3.11" matches 3.11.x, "3.11.2" matches exactly 3.11.2).  Components
 * compare numerically.  Returns 1 satisfied, 0 not, -EINVAL for a
 * malformed constraint or version. */
int al_version_satisfies(const char *version, const char *constraint);

#endif
