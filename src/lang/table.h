/* Internal: rows of the languages table and helpers shared by the
 * observation, cache and plan code of src/lang. */
#ifndef AL_LANG_TABLE_H
#define AL_LANG_TABLE_H

#include "lang/languages.h"

/* How a row's interpreter is asked for its facts. */
typedef enum al_probe_kind {
	AL_PROBE_SH,	     /* resolve the shell; version by implementation */
	AL_PROBE_BASH,	     /* `bash --version` */
	AL_PROBE_PYTHON,     /* one-line probe: version, executable, prefixes */
	AL_PROBE_NODE,	     /* same for node */
	AL_PROBE_TYPESCRIPT, /* node's facts plus a transpiler when needed */
	AL_PROBE_RUBY,	     /* same as python, through RbConfig */
	AL_PROBE_PWSH,	     /* same, through $PSVersionTable / $PSHOME */
	AL_PROBE_GCC,	     /* gcc/g++ -dumpfullversion */
	AL_PROBE_GO,	     /* go env GOROOT GOVERSION */
	AL_PROBE_RUST,	     /* rustc (rustup proxy seen through) */
	AL_PROBE_JAVA,	     /* javac -version, java beside it */
} al_probe_kind;

typedef struct al_lang_row {
	const char *language;
	const char *toolchain;
	const char *script_name;
	/* Names looked up on PATH, in order; the first name found anywhere
	 * on PATH wins ("python3" before "python"). */
	const char *const *candidates;
	al_probe_kind probe;
	int timeout_ms;
} al_lang_row;

const al_lang_row *al_lang_row_find(const char *language);
/* Index of the row in the table, for per-row cache slots. */
size_t al_lang_row_index(const al_lang_row *row);
size_t al_lang_row_count(void);
/* The row compiles its code to an artifact before the run. */
bool al_lang_row_compiled(const al_lang_row *row);

/* The build and run steps of a compiled row (plan_compiled.c). */
int al_plan_compiled(const al_lang_row *row, const al_toolchain *tc,
		     const char *script_path, const char *build_dir, char *const *args, size_t nargs,
		     const al_plan_opts *opts, al_plan *out);

/* NULL-terminated string vectors. */
size_t al_strv_len(char *const *v);
int al_strv_copy(char *const *v, char ***out);
void al_strv_free_all(char **v);
/* Appends a copy of s; *v may be NULL. */
int al_strv_push(char ***v, const char *s);

int al_toolchain_dup(const al_toolchain *src, al_toolchain **out);

#endif
