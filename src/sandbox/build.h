/* Internal: the build step of a compiled language in the sandbox. */
#ifndef AL_SANDBOX_BUILD_H
#define AL_SANDBOX_BUILD_H

#include "lang/languages.h"
#include "sandbox/run.h"

/* envp followed by extra (the plan's build variables, which win over a
 * variable of the same name); the strings are borrowed.  Free the array
 * with free(). */
int al_sb_build_env(char *const *envp, char *const *extra, char ***out);

/* Runs plan's build step in a fresh sandbox of its own (step: the run's
 * step; its limits are the request's limits.build, /build writable, no
 * stdin, no streaming), or unpacks the artifact from the build cache
 * when exec->build_cache_dir holds an entry for (toolchain, build argv
 * and env, sources_digest).  Fills res->build.  Returns 0 when the run
 * goes on, 1 when res holds the run's outcome (failed/build_failed for
 * a build that failed, was killed or timed out; cancelled, interrupted
 * or unavailable as the build step ended), a negative errno for a
 * provider bug. */
int al_sb_build(al_sb_step *step, const al_plan *plan, char *const *envp,
		const al_toolchain *tc, const char *sources_digest,
		al_result *res, al_error **err);

#endif
