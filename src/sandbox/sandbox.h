/* The `sandbox` provider: real Linux isolation (namespaces, a minimal
 * read-only root, no capabilities, seccomp, Landlock, cgroups).  See
 * docs/sandbox.md. */
#ifndef AL_SANDBOX_SANDBOX_H
#define AL_SANDBOX_SANDBOX_H

#include <stdbool.h>
#include <stdio.h>

#include <airlock/provider.h>

extern const al_provider_ops al_sandbox_provider;

/* Explains, mechanism by mechanism, what this host lacks for the sandbox
 * and how an operator fixes it (text, or one JSON object when json).
 * Returns 0 when everything the sandbox needs works, 1 otherwise. */
int al_sandbox_doctor(FILE *out, bool json);

/* Warm pools off for every sandbox handle ensured afterwards in this
 * process, whatever its config says: a one-shot `airlock run` would make
 * members only to throw them away (docs/sandbox.md, "Warm pools"). */
void al_sandbox_pools_off(void);

#endif
