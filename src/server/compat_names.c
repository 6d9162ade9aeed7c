/* The two APIs' names for airlock's languages (docs/compat.md): Piston's
 * language names and aliases, Judge0 CE's published language ids. */
#include <string.h>

#include "server/compat_names.h"

/* Piston's usual names and aliases; Judge0 CE's ids and the names its
 * seeds give them (the version in parentheses is the observed one). */
static const al_compat_lang langs[] = {
	{"bash", "bash", NULL, {"sh", NULL}, 46, "Bash", "script.sh"},
	{"bash", "sh", NULL, {"sh", NULL}, 0, NULL, NULL},
	{"python", "python", NULL, {"py", "py3", "python3", NULL}, 71,
	 "Python", "script.py"},
	{"javascript", "javascript", "node",
	 {"node-javascript", "node-js", "js", NULL}, 63, "JavaScript (Node.js",
	 "script.js"},
	{"typescript", "typescript", NULL, {"ts", "node-ts", "tsc", NULL}, 74,
	 "TypeScript", "script.ts"},
	{"ruby", "ruby", NULL, {"ruby3", "rb", NULL}, 72, "Ruby", "script.rb"},
	{"powershell", "powershell", NULL, {"ps", "pwsh", "ps1", NULL}, 0,
	 NULL, NULL},
	{"c", "c", NULL, {"gcc", NULL}, 50, "C (GCC", "main.c", true},
	{"c++", "cpp", NULL, {"cpp", "g++", NULL}, 54, "C++ (GCC", "main.cpp", true},
	{"go", "go", NULL, {"golang", NULL}, 60, "Go", "main.go", true},
	{"rust", "rust", NULL, {"rs", NULL}, 73, "Rust", "main.rs", true},
	{"java", "java", NULL, {NULL}, 62, "Java (OpenJDK", "Main.java", true},
};
#define N_LANGS (sizeof(langs) / sizeof(langs[0]))

const al_compat_lang *al_compat_lang_at(size_t i)
{
	return i < N_LANGS ? &langs[i] : NULL;
}

bool al_compat_lang_named(const al_compat_lang *l, const char *name)
{
	if (strcmp(l->piston, name) == 0)
		return true;
	for (size_t i = 0; l->aliases[i] != NULL; i++)
		if (strcmp(l->aliases[i], name) == 0)
			return true;
	return false;
}

const al_compat_lang *al_compat_lang_by_id(int id)
{
	for (size_t i = 0; i < N_LANGS; i++)
		if (langs[i].judge0_id == id)
			return &langs[i];
	return NULL;
}

const char *al_compat_observed(json_t *observed, const char *airlock)
{
	size_t i;
	json_t *l;
	json_array_foreach(observed, i, l) {
		const char *name =
			json_string_value(json_object_get(l, "language"));
		if (name != NULL && strcmp(name, airlock) == 0)
			return json_string_value(json_object_get(l, "version"));
	}
	return NULL;
}
