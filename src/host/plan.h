/* Internal: the execution plan's SHA-256 — one hash over everything in a
 * request that decides what executes (language, code, argv, env, stdin,
 * input files, toolchain), in the canonical form docs/host.md defines so
 * a client can compute it.  Content pins name it. */
#ifndef AL_HOST_PLAN_H
#define AL_HOST_PLAN_H

#include <stdbool.h>

#include <airlock/contract.h>

/* 0, or -ENOMEM. */
int al_plan_sha256(const al_request *req, char hex[65]);
/* true when the plan is the code alone: no argv, env, stdin, files or
 * toolchain (what a code pin covers). */
bool al_plan_code_only(const al_request *req);

#endif
