/* Internal: Piston language names and Judge0 CE language ids. */
#ifndef AL_SERVER_COMPAT_NAMES_H
#define AL_SERVER_COMPAT_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

typedef struct al_compat_lang {
	const char *piston;  /* Piston's language name */
	const char *airlock; /* airlock's language */
	const char *runtime; /* Piston's "runtime", or NULL */
	const char *aliases[5];
	int judge0_id; /* 0: not a Judge0 CE language */
	const char *judge0_name; /* "Python" → "Python (3.11.2)" */
	const char *judge0_file;
	bool compiled; /* has a build step with limits of its own */
} al_compat_lang;

/* The i-th row, NULL past the end (rows with the same Piston name are
 * alternatives, first observed wins). */
const al_compat_lang *al_compat_lang_at(size_t i);
bool al_compat_lang_named(const al_compat_lang *l, const char *name);
const al_compat_lang *al_compat_lang_by_id(int id);
/* The version observed for an airlock language in the facts' languages
 * array, or NULL when it was not observed. */
const char *al_compat_observed(json_t *observed, const char *airlock);

#endif
