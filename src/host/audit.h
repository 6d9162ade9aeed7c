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

#endif
