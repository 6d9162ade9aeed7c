/* The filters of GET /v1/runs: each value is checked before any run is
 * looked at, and a bad one is refused (400) rather than ignored, so a
 * typo never silently widens what a caller sees. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lang/languages.h"
#include "server/run_filter.h"

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static int num(const char *s, size_t n)
{
	int v = 0;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

int al_run_filter_time(const char *s, int64_t *ms)
{
	/* Fixed positions: 2026-12-01T16:01:11Z or 2026-12-01T16:01:11.593Z */
	size_t n = strlen(s);
	if ((n != 20 && n != 24) || s[4] != '-' || s[7] != '-' ||
	    s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[n - 1] != 'Z')
		return -EINVAL;
	if (!digits(s, 4) || !digits(s + 5, 2) || !digits(s + 8, 2) ||
	    !digits(s + 11, 2) || !digits(s + 14, 2) || !digits(s + 17, 2))
		return -EINVAL;
	int frac = 0;
	if (n == 24) {
		if (s[19] != '.' || !digits(s + 20, 3))
			return -EINVAL;
		frac = num(s + 20, 3);
	}
	struct tm tm = {
		.tm_year = num(s, 4) - 1900,
		.tm_mon = num(s + 5, 2) - 1,
		.tm_mday = num(s + 8, 2),
		.tm_hour = num(s + 11, 2),
		.tm_min = num(s + 14, 2),
		.tm_sec = num(s + 17, 2),
	};
	if (tm.tm_year < 70 || tm.tm_mon > 11 || tm.tm_mday < 1 ||
	    tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 59)
		return -EINVAL;
	int mday = tm.tm_mday;
	time_t t = timegm(&tm);
	/* timegm normalises 02-31 into March: a date that moved is no date. */
	if (t == (time_t)-1 || tm.tm_mday != mday)
		return -EINVAL;
	*ms = (int64_t)t * 1000 + frac;
	return 0;
}

static int bad(const char **why, const char *msg)
{
	*why = msg;
	return -EINVAL;
}

int al_run_filter_parse(al_run_filter *f, const char *outcome,
			const char *language, const char *since,
			const char *until, const char **why)
{
	*f = (al_run_filter){.since_ms = INT64_MIN, .until_ms = INT64_MAX};
	*why = NULL;
	if (outcome != NULL) {
		if (al_outcome_from_name(outcome, &f->outcome) < 0)
			return bad(why, "outcome: not an outcome name");
		f->by_outcome = true;
	}
	if (language != NULL) {
		if (strlen(language) >= sizeof(f->language) ||
		    !al_language_known(language))
			return bad(why, "language: not a known language");
		snprintf(f->language, sizeof(f->language), "%s", language);
	}
	if (since != NULL && al_run_filter_time(since, &f->since_ms) < 0)
		return bad(why, "since: expected an RFC 3339 UTC time "
				"(2026-12-01T16:01:11Z)");
	if (until != NULL && al_run_filter_time(until, &f->until_ms) < 0)
		return bad(why, "until: expected an RFC 3339 UTC time "
				"(2026-12-01T16:01:11Z)");
	if (f->since_ms >= f->until_ms)
		return bad(why, "since: must be before until");
	return 0;
}

bool al_run_filter_match(const al_run_filter *f, bool done,
			 al_outcome outcome, const char *language,
			 int64_t created_ms)
{
	if (f->by_outcome && (!done || outcome != f->outcome))
		return false;
	if (f->language[0] != '\0' && strcmp(language, f->language) != 0)
		return false;
	return created_ms >= f->since_ms && created_ms < f->until_ms;
}
