/* Results: allocation, outcome setting and the shape rules. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <airlock/contract.h>

#include "core/build_contract.h"
#include "core/util.h"

al_result *al_result_new(void)
{
	al_result *r = calloc(1, sizeof(*r));
	if (r == NULL)
		return NULL;
	for (int s = 0; s < 2; s++) {
		if (al_bytes_set(&r->output[s], "", 0) < 0) {
			al_result_free(r);
			return NULL;
		}
	}
	return r;
}

void al_result_free(al_result *r)
{
	if (r == NULL)
		return;
	free(r->reason);
	for (int s = 0; s < 2; s++)
		free(r->output[s].data);
	al_facts_free(r->provider);
	for (size_t i = 0; i < r->n_outputs; i++) {
		free(r->outputs[i].path);
		free(r->outputs[i].artifact);
		free(r->outputs[i].refused_reason);
	}
	free(r->outputs);
	for (size_t i = 0; i < r->n_inbox_acked; i++)
		free(r->inbox_acked[i]);
	free(r->inbox_acked);
	al_result_build_free(r);
	free(r);
}

/* Retrying the same request cannot change these outcomes. */
static bool outcome_is_permanent(al_outcome o)
{
	switch (o) {
	case AL_OUTCOME_INVALID_REQUEST:
	case AL_OUTCOME_DENIED:
	case AL_OUTCOME_UNSUPPORTED_LANGUAGE:
	case AL_OUTCOME_UNENFORCEABLE_LIMIT:
	case AL_OUTCOME_DISABLED:
	case AL_OUTCOME_CONFLICT:
		return true;
	default:
		return false;
	}
}

int al_result_set_outcome(al_result *r, al_outcome outcome, const char *reason)
{
	char *copy = NULL;
	if (al_strdup_opt(reason, &copy) < 0)
		return -ENOMEM;
	free(r->reason);
	r->reason = copy;
	r->outcome = outcome;
	r->permanent = outcome_is_permanent(outcome);
	return 0;
}

int al_result_check_shape(const al_result *r)
{
	if ((unsigned)r->outcome >= AL_OUTCOME__COUNT)
		return -EPROTO;
	switch (r->outcome) {
	case AL_OUTCOME_COMPLETED:
		if (!r->has_exit_code || r->exit_code != 0 || r->has_signal)
			return -EPROTO;
		break;
	case AL_OUTCOME_FAILED:
		/* A failed build: no run step, so no process fields; the
		 * build object says what the compiler did. */
		if (r->reason != NULL && strcmp(r->reason, "build_failed") == 0) {
			if (r->has_exit_code || r->has_signal ||
			    r->output_seen[0] != 0 || r->output_seen[1] != 0 ||
			    r->build == NULL ||
			    r->build->outcome == AL_OUTCOME_COMPLETED)
				return -EPROTO;
			break;
		}
		if (!r->has_exit_code || r->exit_code == 0 || r->has_signal)
			return -EPROTO;
		break;
	case AL_OUTCOME_KILLED:
	case AL_OUTCOME_INTERRUPTED:
		if (r->has_exit_code)
			return -EPROTO;
		if (r->outcome == AL_OUTCOME_KILLED && !r->has_signal)
			return -EPROTO;
		break;
	case AL_OUTCOME_TIMED_OUT:
	case AL_OUTCOME_CANCELLED:
		if (r->has_exit_code)
			return -EPROTO;
		break;
	default:
		/* Refusals: no process existed, so no process fields. */
		if (r->has_exit_code || r->has_signal ||
		    r->output_seen[0] != 0 || r->output_seen[1] != 0)
			return -EPROTO;
		break;
	}
	return 0;
}

int64_t al_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void al_format_time_ms(int64_t ms, char *buf, size_t len)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	char base[32];
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", base, (int)(ms % 1000));
}
