/* Internal: a durable run's inbox (docs/durability.md, "Inbox").
 *
 * RUN/inbox holds the delivered events, one file each,
 * NNNNNN-<id>.json (delivery order, then the event id; mode 0444), with
 * {"id": ..., "event": ...}; the program reads them (AIRLOCK_INBOX).  It
 * acknowledges one by creating RUN/acks/<id> (AIRLOCK_INBOX_ACKS).  Every
 * change happens under the run's lock, and a delivery is refused once the
 * result is recorded, so "delivered" always means "there before the run
 * ended".  The acks directory is the program's: it is only ever listed,
 * never followed. */
#ifndef AL_SUPERVISOR_INBOX_H
#define AL_SUPERVISOR_INBOX_H

#include <stddef.h>

/* Creates RUN/inbox (0755) and RUN/acks (0700). */
int al_inbox_prepare(int dirfd);
/* Delivers one event (caller holds the run lock).  0 delivered, 1 the id
 * was delivered before (nothing written), -EALREADY the result is already
 * recorded, -ENOSPC the inbox holds AL_MAX_INBOX_EVENTS events. */
int al_inbox_deliver(int dirfd, const char *id, const char *event_json);
/* The ids of delivered events that carry an acknowledgement, in delivery
 * order; forged acknowledgements (ids never delivered) are ignored. */
int al_inbox_acked(int dirfd, char ***ids, size_t *n);
/* The delivered events without an acknowledgement, in delivery order:
 * their ids, and (events not NULL) each one's stored text
 * {"id": ..., "event": ...}.  Both arrays hold *n strings; the caller
 * frees them. */
int al_inbox_pending(int dirfd, char ***ids, char ***events, size_t *n);
/* Replaces res->inbox_pending with the run's pending event ids. */
struct al_result;
int al_inbox_result_pending(int dirfd, struct al_result *res);

#endif
