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

#endif
