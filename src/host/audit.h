/* Internal: appending to the hash-chained audit trail (docs/audit.md). */
#ifndef AL_HOST_AUDIT_H
#define AL_HOST_AUDIT_H

#include <jansson.h>

#include "host/db.h"

/* Appends one record.  `record` holds the event's fields (event, tenant,
 * ...); seq and time are added here.  full: commit with synchronous=FULL
 * (always so for run.started).  Returns 0 once the record is committed. */
int al_audit_append(al_db *db, json_t *record, bool full, al_error **err);
/* 1 when a record with this event (NULL: any event) and run_id exists,
 * 0 when not, negative errno on a database error (recovery's exactly-once
 * check; a caller-chosen run id's "ever used" check). */
int al_audit_has_event(al_db *db, const char *run_id, const char *event);
/* Where a search for open starts may begin: the record before it is
 * seq - 1 with this hash (seq 1: the whole trail). */
typedef struct al_audit_mark {
	int64_t seq;
	char hash[65];
} al_audit_mark;

/* The run.started records without a run.finished for their run, oldest
 * first, as a JSON array (recovery: a start must not stay open).  The
 * search begins at *from when the trail still holds the record it names
 * (else at 1); *head is then the mark just past the trail's last record,
 * read before the search. */
int al_audit_open_starts(al_db *db, const al_audit_mark *from,
			 json_t **starts, al_audit_mark *head,
			 al_error **err);
/* Appends the run.finished that closes `start` (a run.started record):
 * its fields, with this outcome and reason, and `detail` saying why the
 * daemon made it.  Synced like run.started. */
int al_audit_close_start(al_db *db, const json_t *start, const char *outcome,
			 const char *reason, const char *detail,
			 al_error **err);

#endif
