/* The `sandbox` provider: real Linux isolation (namespaces, a minimal
 * read-only root, no capabilities, seccomp, Landlock, cgroups).  See
 * docs/sandbox.md. */
#ifndef AL_SANDBOX_SANDBOX_H
#define AL_SANDBOX_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

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

/* Every sandbox handle ensured afterwards in this process serves one run
 * (a one-shot `airlock run`) of language (NULL: its request names none):
 * its facts hold that language's toolchain alone when the host has it;
 * no warm pools, and that run's network namespace and cgroups are made
 * from the ensure on, by helper threads, while the host admits and
 * audits the run; nothing is made after it, and what it leaves is
 * removed behind while the host finishes (docs/sandbox.md, "Made ahead,
 * removed behind"). */
void al_sandbox_one_run(const char *language);

/* No cgroups made ahead for handles ensured afterwards in this process:
 * a supervisor's runs' cgroups belong to the durable run's tree, which
 * the daemon removes with the run (docs/sandbox.md, "cgroups"). */
void al_sandbox_cgroups_ahead_off(void);

/* The idle supervisors a daemon keeps ready for a candidate of provider
 * `provider` with configuration `config` (docs/durability.md, "Idle
 * supervisors"): when it is a sandbox candidate, for each language of its
 * "pool" with a valid size, on(ctx, language, size, ensure) where ensure
 * is the configuration a supervisor ensures to hold one member of that
 * language, made again between runs, of an inbox class (every run
 * through the daemon is durable, with an inbox).  Nothing for another provider or a
 * malformed pool (the sandbox refuses that itself when ensured).  0, the
 * first negative return of on, or -ENOMEM. */
typedef int (*al_sandbox_warm_fn)(void *ctx, const char *language,
				  unsigned size, json_t *ensure);
int al_sandbox_idle_targets(const char *provider, json_t *config,
			    al_sandbox_warm_fn on, void *ctx);
/* A candidate's configuration for a generic idle supervisor, which holds
 * no warm sandbox of its own: without the sandbox's pools. */
void al_sandbox_config_drop_pools(const char *provider, json_t *config);

/* For a supervisor that serves several runs with a warm sandbox
 * (docs/durability.md, "A supervisor that serves several runs"), h a
 * handle of this provider: al_sb_pool_renew and al_sb_pool_cgroups on
 * its pool (-ENOENT and 0 without one). */
#define AL_SANDBOX_CG_NAME_MAX 96
int al_sandbox_pool_renew(al_provider_handle *h, int timeout_ms);
size_t al_sandbox_pool_cgroups(al_provider_handle *h,
			       char (*names)[AL_SANDBOX_CG_NAME_MAX],
			       size_t max);

#endif
