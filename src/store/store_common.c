/* The fleet audit chain's record format and its check, for every store
 * backend (docs/scale-out.md, "The audit chain"). */
#include "store/store_common.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <airlock/json.h>

const char al_store_zero_hash[65] =
	"0000000000000000000000000000000000000000000000000000000000000000";

void al_store_now_text(char *when, size_t len)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(when, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}

int al_store_chain_hash(const char *prev, const char *record, char hash[65])
{
	size_t pl = strlen(prev), rl = strlen(record);
	char *cat = malloc(pl + rl + 1);
	if (cat == NULL)
		return -ENOMEM;
	snprintf(cat, pl + rl + 1, "%s%s", prev, record);
	al_sha256_hex(cat, pl + rl, hash);
	free(cat);
	return 0;
}

void al_store_chain_init(al_store_chain *ch)
{
	ch->want = 1;
	memcpy(ch->prev, al_store_zero_hash, sizeof(ch->prev));
	ch->records = 0;
}

int al_store_chain_next(al_store_chain *ch, int64_t seq,
			const char *prev_hash, const char *hash,
			const char *record, al_error **err)
{
	char mine[65];
	/* The hash is over the stored prev_hash: a record whose link alone
	 * was edited fails as a previous hash mismatch. */
	if (al_store_chain_hash(prev_hash, record, mine) < 0)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	const char *why = NULL;
	if (seq != ch->want)
		why = "sequence gap";
	else if (strcmp(prev_hash, ch->prev) != 0)
		why = "previous hash mismatch";
	else if (strcmp(mine, hash) != 0)
		why = "record hash mismatch";
	if (why != NULL)
		return al_error_set(err, AL_ERR_IO, EBADMSG, "audit",
				    "audit chain broken at record %" PRId64
				    ": %s",
				    seq, why);
	snprintf(ch->prev, sizeof(ch->prev), "%s", hash);
	ch->want++;
	ch->records++;
	return 0;
}

json_t *al_store_queued_record(const al_store_submit *s)
{
	json_t *rec = json_pack("{s:s, s:s, s:s}", "event", "run.queued",
				"run_id", s->run_id, "tenant", s->tenant);
	if (rec != NULL && s->traceparent != NULL &&
	    strlen(s->traceparent) == 55 &&
	    (json_object_set_new(rec, "traceparent",
				 json_string(s->traceparent)) < 0 ||
	     json_object_set_new(rec, "trace_id",
				 json_stringn(s->traceparent + 3, 32)) < 0)) {
		json_decref(rec);
		return NULL;
	}
	return rec;
}

json_t *al_store_lost_record(const char *run_id, const char *tenant,
			     const char *node, const char *detail)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "event",
			 "run.finished", "run_id", run_id, "tenant", tenant,
			 "node", node, "outcome", "unavailable", "reason",
			 "lost", "detail", detail);
}
