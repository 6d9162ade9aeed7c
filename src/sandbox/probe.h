/* Internal: the sandbox provider's observed facts. */
#ifndef AL_SANDBOX_PROBE_H
#define AL_SANDBOX_PROBE_H

#include <stdbool.h>

#include <airlock/contract.h>
#include <airlock/error.h>

#include "sandbox/context.h"

/* The facts: mechanisms and cgroups as ctx observed them, and every
 * language whose toolchain runs inside a sandbox (cached per toolchain
 * identity; a miss runs it now, compiling ctx's filter if needed). */
int al_sb_probe_facts(al_sb_context *ctx, al_facts **out, al_error **err);
/* The same, of language's toolchain alone (a known language; NULL: every
 * language): the facts of a handle that serves one run of it. */
int al_sb_probe_facts_of(al_sb_context *ctx, const char *language,
			 al_facts **out, al_error **err);
/* The AL_LIMIT_* bits ctx can enforce (the facts' limits). */
unsigned al_sb_probe_limits(const al_sb_context *ctx);
/* Runs an empty program of language in a real sandbox now (no cache):
 * 1 when it completed, 0 when not, -ENOENT when no usable toolchain. */
int al_sb_probe_try_language(al_sb_context *ctx, const char *language);

#endif
