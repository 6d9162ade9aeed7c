/* Internal: what the store backends share — the fleet audit chain's
 * record format and its check (docs/scale-out.md, "The audit chain"). */
#ifndef AL_STORE_STORE_COMMON_H
#define AL_STORE_STORE_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <airlock/error.h>

#include "store/store.h"

/* The prev_hash of the first record. */
extern const char al_store_zero_hash[65];

/* The record's "time": UTC, milliseconds, ISO 8601. */
void al_store_now_text(char *when, size_t len);

/* hash = sha256(prev_hash || record), both as text: 0 or -ENOMEM. */
int al_store_chain_hash(const char *prev, const char *record,
			char hash[65]);

/* Checks a chain read in seq order, one record at a time. */
typedef struct al_store_chain {
	int64_t want;
	char prev[65];
	uint64_t records;
} al_store_chain;

void al_store_chain_init(al_store_chain *ch);
/* 0, or -EBADMSG with err naming the record (-ENOMEM). */
int al_store_chain_next(al_store_chain *ch, int64_t seq,
			const char *prev_hash, const char *hash,
			const char *record, al_error **err);

/* A submission's run.queued record (NULL: out of memory): with the
 * caller's trace when it came with one, as a single node's run.started
 * has it (docs/audit.md). */
json_t *al_store_queued_record(const al_store_submit *s);

/* The run.finished record of a run the fleet ended as lost (outcome
 * unavailable, reason lost, detail the why: node_lost,
 * forwarded_env_lost); NULL: out of memory. */
json_t *al_store_lost_record(const char *run_id, const char *tenant,
			     const char *node, const char *detail);

#endif
