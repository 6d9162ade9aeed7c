/* Internal: judged test cases (request "tests"; docs/contract.md). */
#ifndef AL_HOST_JUDGE_H
#define AL_HOST_JUDGE_H

#include <stdint.h>

#include <airlock/provider.h>

/* At most this many cases of one request run at once. */
#define AL_JUDGE_MAX_PARALLEL 8

/* Runs ex->request's tests on the provider: each case is one execution
 * of the request with the case's stdin, argv and limits, in a fresh
 * sandbox, under a run id of its own; the first case runs alone (a
 * compiled language builds there and fills the build cache), the others
 * after it, `parallel` at a time.  res gets the first case's build
 * object and provider facts, every case's result and verdict, and the
 * outcome completed — or, when the first case did not run its program
 * (build_failed, a refusal, a cancel), that case's outcome and no cases.
 * Returns 0, or a negative errno for a bug (out of memory). */
int al_judge_execute(const al_provider_ops *ops, al_provider_handle *handle,
		     const al_exec *ex, unsigned parallel, al_result *res,
		     al_error **err);

/* How long the host waits for the provider (before its grace): the
 * request's wall limit, plus the build's for a language that builds;
 * with tests, every wave of cases with a build each. */
uint64_t al_judge_budget_ms(const al_request *req, unsigned parallel,
			    uint64_t grace_ms);

#endif
