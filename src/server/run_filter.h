/* Internal: the query filters of GET /v1/runs (docs/api.md): outcome,
 * language and a time range, parsed strictly and matched against the run
 * table's entries. */
#ifndef AL_SERVER_RUN_FILTER_H
#define AL_SERVER_RUN_FILTER_H

#include <stdbool.h>
#include <stdint.h>

#include <airlock/contract.h>

typedef struct al_run_filter {
	bool by_outcome;
	al_outcome outcome;
	char language[32]; /* "" for any */
	int64_t since_ms;  /* created at or after; INT64_MIN for any */
	int64_t until_ms;  /* created before; INT64_MAX for any */
} al_run_filter;

/* Parses the query values (each NULL when absent).  0, or -EINVAL with
 * *why naming the bad parameter (never echoing its value). */
int al_run_filter_parse(al_run_filter *f, const char *outcome,
			const char *language, const char *since,
			const char *until, const char **why);
/* Whether a run with these fields passes.  done: finished (outcome is
 * meaningful); language: "" when unknown. */
bool al_run_filter_match(const al_run_filter *f, bool done,
			 al_outcome outcome, const char *language,
			 int64_t created_ms);
/* An RFC 3339 UTC time, "YYYY-MM-DDTHH:MM:SS[.mmm]Z", as ms since the
 * epoch.  -EINVAL when it is anything else. */
int al_run_filter_time(const char *s, int64_t *ms);

#endif
