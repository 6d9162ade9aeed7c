/* Internal: the inbox of a warm pool member (docs/sandbox.md, "Warm
 * pools").  A member of an inbox class is made before its run's
 * directories exist, so it has two of its own, in its run directory and
 * exactly as a cold run's: inbox (0755, the host's; bound read-only at
 * /inbox) and acks (0700, the run's uid; read-write at /inbox-acks).  At
 * go a forwarder copies the run's events (exec->inbox_dir) into the
 * member's inbox and mirrors the program's acknowledgements into
 * exec->inbox_acks_dir, until the run is over. */
#ifndef AL_SANDBOX_WARM_INBOX_H
#define AL_SANDBOX_WARM_INBOX_H

#include <sys/types.h>

/* Creates root/inbox (0755) and root/acks (0700, owned by uid unless
 * uid is (uid_t)-1); *inbox and *acks get their paths (the caller frees
 * them; they go with the run directory).  0 or a negative errno. */
int al_sb_inbox_dirs_create(const char *root, uid_t uid, char **inbox,
			    char **acks);

typedef struct al_sb_inbox_fwd al_sb_inbox_fwd;

/* Copies the events already in host_inbox into m_inbox (before the
 * program starts), then forwards in a thread of its own: new events are
 * copied whole (temp + rename, 0444, the source's owner and times), and a
 * marker in m_acks named after a forwarded event's id is mirrored as an
 * empty file into host_acks (never followed, read or listed).  0, or a
 * negative errno with nothing left running. */
int al_sb_inbox_fwd_start(const char *host_inbox, const char *host_acks,
			  const char *m_inbox, const char *m_acks,
			  al_sb_inbox_fwd **out);

/* Stops the thread, then a last sweep (the program is over): every
 * acknowledgement is in host_acks when this returns.  Frees f (NULL is
 * fine).  0, or a negative errno when a marker could not be written. */
int al_sb_inbox_fwd_stop(al_sb_inbox_fwd *f);

#endif
