/* example-local: a small third-party airlock provider written only against
 * the public headers, as a model for docs/writing-a-provider.md.
 *
 * Trusted local execution of `sh` programs: a shepherd process per run
 * (own session, child subreaper) that kills the program's whole tree when
 * it ends; rlimits for CPU time, file size and open files; a wall deadline
 * with TERM, a grace, then KILL; per-stream output caps; a clean
 * environment; a private run directory.  It claims no isolation axis and
 * advertises only the limits it enforces.
 *
 * Configuration (a JSON object, all keys optional):
 *   {"fail_release": true}  release reports a failure (used by the kit's
 *                           own tests to show a failed release is seen)
 */
#ifndef EXAMPLE_PROVIDER_H
#define EXAMPLE_PROVIDER_H

#include <airlock/provider.h>

extern const al_provider_ops example_provider_ops;

#endif
