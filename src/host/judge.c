/* Judged test cases: one provider execution per case, the first alone
 * (it builds, filling the build cache), the rest in parallel up to the
 * slots the host could take; see judge.h and docs/contract.md. */
#include "host/judge.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/build_contract.h"
#include "core/util.h"
#include "lang/languages.h"

typedef struct judge {
	const al_provider_ops *ops;
	al_provider_handle *handle;
	const al_exec *ex;
	al_result *res;
	atomic_size_t next;
	atomic_int bug; /* a provider returned < 0 */
} judge;

/* The request one case runs: the judged request without its tests and
 * declared outputs, with the case's stdin, argv and limits. */
static al_request *case_request(const al_request *req, const al_test_case *t)
{
	al_request *r = al_request_dup(req);

	if (!r)
		return NULL;
	al_request_build_free(r);
	al_strv_free(r->outputs, r->n_outputs);
	r->outputs = NULL;
	r->n_outputs = 0;
	free(r->stdin_data.data);
	r->stdin_data = (al_bytes){ 0 };
	if (al_bytes_dup(&t->stdin_data, &r->stdin_data) < 0)
		goto fail;
	r->has_stdin = true;
	if (t->has_argv) {
		al_strv_free(r->argv, r->argc);
		r->argv = NULL;
		r->argc = 0;
		if (al_strv_dup(t->argv, t->argc, &r->argv) < 0)
			goto fail;
		r->argc = t->argc;
	}
	al_case_limits(req, t, &r->limits);
	r->build_limits = req->build_limits;
	if (al_strv_dup(req->build_flags, req->n_build_flags, &r->build_flags) < 0)
		goto fail;
	r->n_build_flags = req->n_build_flags;
	return r;
fail:
	al_request_free(r);
	return NULL;
}

/* Runs case i; fills res->cases[i].  The first case's result is kept in
 * *first (its build object and provider facts become the run's). */
static int run_case(judge *j, size_t i, al_result **first)
{
	const al_request *req = j->ex->request;
	const al_test_case *t = &req->tests[i];
	al_case_result *k = &j->res->cases[i];
	al_request *r = case_request(req, t);
	al_result *cr = al_result_new();
	al_error *err = NULL;
	char id[40];
	int rc;

	if (!r || !cr) {
		al_request_free(r);
		al_result_free(cr);
		return -ENOMEM;
	}
	/* a run id of its own, a UUID like every run id (the provider
	 * names its directories and cgroups after it; a remote provider
	 * forwards it) */
	al_run_id_new(id);
	snprintf(cr->run_id, sizeof(cr->run_id), "%s", id);
	al_exec ex = *j->ex;
	ex.run_id = id;
	ex.request = r;
	/* the host's bundle is the judged request's: same code and files */
	ex.artifact_dir = NULL;
	ex.on_output = NULL;
	ex.on_output_ctx = NULL;
	rc = j->ops->execute(j->handle, &ex, cr, &err);
	al_error_free(err);
	if (rc < 0 || al_result_check_shape(cr) < 0) {
		k->outcome = AL_OUTCOME_UNAVAILABLE;
		k->reason = strdup("provider_error");
		rc = k->reason ? 0 : -ENOMEM;
		goto out;
	}
	k->outcome = cr->outcome;
	k->has_exit_code = cr->has_exit_code;
	k->exit_code = cr->exit_code;
	k->has_signal = cr->has_signal;
	k->signal = cr->signal;
	k->usage = cr->usage;
	for (int s = 0; s < 2; s++) {
		k->output[s] = cr->output[s];
		cr->output[s] = (al_bytes){ 0 };
		k->truncated[s] = cr->truncated[s];
	}
	if (cr->reason && !(k->reason = strdup(cr->reason))) {
		rc = -ENOMEM;
		goto out;
	}
	if (t->has_expected)
		k->verdict = k->outcome == AL_OUTCOME_COMPLETED &&
				     al_output_matches(&k->output[0], &t->expected_stdout,
						       req->compare)
			     ? AL_VERDICT_ACCEPTED
			     : AL_VERDICT_WRONG_ANSWER;
	if (first) {
		*first = cr;
		cr = NULL;
	}
out:
	al_request_free(r);
	al_result_free(cr);
	return rc;
}

static void *worker(void *arg)
{
	judge *j = arg;

	for (;;) {
		size_t i = atomic_fetch_add(&j->next, 1);

		if (i >= j->ex->request->n_tests)
			break;
		if (al_cancel_state(j->ex->cancel) != AL_CANCEL_NONE) {
			al_case_result *k = &j->res->cases[i];

			k->outcome = al_cancel_state(j->ex->cancel) == AL_CANCEL_INTERRUPTED
					     ? AL_OUTCOME_INTERRUPTED
					     : AL_OUTCOME_CANCELLED;
			continue;
		}
		if (run_case(j, i, NULL) < 0)
			atomic_store(&j->bug, 1);
	}
	return NULL;
}

/* The run's outcome when the first case did not get to run its
 * program: a failed build, a refusal, a cancel. */
static bool stops_all(const al_result *r)
{
	if (r->outcome == AL_OUTCOME_FAILED && r->reason &&
	    strcmp(r->reason, "build_failed") == 0)
		return true;
	return !al_outcome_ran(r->outcome) || r->outcome == AL_OUTCOME_CANCELLED ||
	       r->outcome == AL_OUTCOME_INTERRUPTED;
}

int al_judge_execute(const al_provider_ops *ops, al_provider_handle *handle,
		     const al_exec *ex, unsigned parallel, al_result *res,
		     al_error **err)
{
	const al_request *req = ex->request;
	judge j = { .ops = ops, .handle = handle, .ex = ex, .res = res };
	al_result *first = NULL;
	int64_t t0 = al_now_ms();
	int rc;

	snprintf(res->run_id, sizeof(res->run_id), "%s", ex->run_id);
	res->started_at_ms = t0;
	res->cases = calloc(req->n_tests, sizeof(*res->cases));
	if (!res->cases)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL, "out of memory");
	res->n_cases = req->n_tests;
	rc = run_case(&j, 0, &first);
	if (rc < 0 || !first) {
		al_result_free(first);
		if (rc < 0)
			return al_error_set(err, AL_ERR_INTERNAL, -rc, NULL, "out of memory");
		/* the provider failed: the run says so, no case ran */
		al_case_results_free(res->cases, res->n_cases);
		res->cases = NULL;
		res->n_cases = 0;
		return al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE, "provider_error");
	}
	res->provider = first->provider;
	first->provider = NULL;
	res->build = first->build;
	first->build = NULL;
	if (stops_all(first)) {
		/* nothing of any case ran: the run is the first's outcome */
		al_case_results_free(res->cases, res->n_cases);
		res->cases = NULL;
		res->n_cases = 0;
		rc = al_result_set_outcome(res, first->outcome, first->reason);
		al_result_free(first);
		res->finished_at_ms = al_now_ms();
		return rc;
	}
	al_result_free(first);

	atomic_store(&j.next, 1);
	size_t want = req->n_tests - 1;
	size_t nthreads = parallel < 1 ? 1 : parallel;
	if (nthreads > want)
		nthreads = want;
	pthread_t *tids = nthreads ? calloc(nthreads, sizeof(*tids)) : NULL;
	size_t started = 0;

	for (size_t i = 0; tids && i < nthreads; i++)
		if (pthread_create(&tids[i], NULL, worker, &j) == 0)
			started++;
	/* no thread at all: this one does the work */
	if (started == 0)
		worker(&j);
	for (size_t i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	if (atomic_load(&j.bug))
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL, "out of memory");

	/* The judging completed: each case's own outcome says how it went. */
	rc = al_result_set_outcome(res, AL_OUTCOME_COMPLETED, NULL);
	if (al_cancel_state(ex->cancel) != AL_CANCEL_NONE)
		rc = al_result_set_outcome(res,
					   al_cancel_state(ex->cancel) == AL_CANCEL_INTERRUPTED
						   ? AL_OUTCOME_INTERRUPTED
						   : AL_OUTCOME_CANCELLED,
					   NULL);
	else {
		res->has_exit_code = true;
		res->exit_code = 0;
	}
	for (int s = 0; s < 2; s++)
		if (!res->output[s].data && al_bytes_set(&res->output[s], "", 0) < 0)
			rc = -ENOMEM;
	res->usage.wall_ms = (uint64_t)(al_now_ms() - t0);
	res->finished_at_ms = al_now_ms();
	return rc < 0 ? al_error_set(err, AL_ERR_INTERNAL, -rc, NULL, "out of memory") : 0;
}

uint64_t al_judge_budget_ms(const al_request *req, unsigned parallel, uint64_t grace_ms)
{
	al_limits b;
	uint64_t total;

	al_request_build_limits(req, &b);
	/* typescript may transpile first (esbuild) */
	bool builds = req->language && (al_language_compiled(req->language) ||
					strcmp(req->language, "typescript") == 0);
	if (req->n_tests == 0)
		return req->limits.wall_ms + (builds ? b.wall_ms + grace_ms : 0);
	uint64_t worst = 0;
	for (size_t i = 0; i < req->n_tests; i++) {
		al_limits l;

		al_case_limits(req, &req->tests[i], &l);
		if (l.wall_ms > worst)
			worst = l.wall_ms;
	}
	/* the first case alone, then the rest in waves of `parallel`; every
	 * case may build (the cache off) */
	uint64_t per = worst + grace_ms + (builds ? b.wall_ms + grace_ms : 0);
	size_t rest = req->n_tests - 1;
	size_t p = parallel ? parallel : 1;
	total = per * (1 + (rest + p - 1) / p);
	return total;
}
