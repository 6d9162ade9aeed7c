/* Internal: the env policy — variables that make an interpreter, the
 * shell or the C library load or change code before (or instead of) the
 * program's own.  A request may set one only when its tenant's
 * configuration names it ("env_allow"); docs/host.md has the table. */
#ifndef AL_HOST_ENV_POLICY_H
#define AL_HOST_ENV_POLICY_H

#include <stdbool.h>
#include <stddef.h>

typedef struct al_env_rule {
	const char *pattern; /* an exact name, or a prefix ending in '*' */
	const char *reader;  /* who reads it: "all", "sh", "python", ... */
	bool reserved; /* refused by the contract already (request parse) */
} al_env_rule;

/* The rule covering `name`, or NULL.  The returned pattern is the table's
 * own constant, so it may be named in a refusal (the request's name and
 * value never are). */
const al_env_rule *al_env_policy_match(const char *name);
/* true when the contract refuses the name anyway (LD_*, ...). */
bool al_env_policy_reserved(const char *name);
/* The whole table, for tests and documentation checks. */
const al_env_rule *al_env_policy_table(size_t *n);

#endif
