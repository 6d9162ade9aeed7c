/* Internal: a sandboxed run's inbox (docs/sandbox.md, "Warm pools";
 * docs/durability.md, "Inbox").  The program's acknowledgements are
 * markers in /inbox-acks, a small tmpfs of the sandbox's own (mounts.h),
 * never a host directory: the forwarder mirrors a marker named after a
 * delivered event's id as an empty file into the run's host acks
 * directory (exec->inbox_acks_dir), so the host holds at most one empty
 * file per event whatever the program writes.  A cold run's /inbox is
 * the run's inbox bound read-only.  A warm member of an inbox class is
 * made before its run's directories exist, so its /inbox is a directory
 * of its own (0755, the host's, in its run directory) into which the
 * forwarder also copies the run's events. */
#ifndef AL_SANDBOX_WARM_INBOX_H
#define AL_SANDBOX_WARM_INBOX_H

#include <sys/types.h>

/* Creates root/inbox (0755); *inbox gets its path (the caller frees it;
 * it goes with the run directory).  0 or a negative errno. */
int al_sb_inbox_dir_create(const char *root, char **inbox);

typedef struct al_sb_inbox_fwd al_sb_inbox_fwd;

/* How often the forwarder looks, and how long a run goes before its
 * thread begins (al_sb_inbox_fwd_begin). */
#define AL_SB_INBOX_TICK_MS 10

/* Takes the events already in host_inbox (before the program starts);
 * once begun, forwards in a thread of its own: with m_inbox, new events are
 * copied into it whole (temp + rename, 0444, the source's owner and
 * times; NULL: the program sees host_inbox itself, the ids are only
 * noted), and a marker beneath m_acks_fd (the /inbox-acks tmpfs; the
 * forwarder holds a duplicate) named after a taken event's id is
 * mirrored as an empty file into host_acks (never followed, read or
 * listed).  0, or a negative errno with nothing left running. */
int al_sb_inbox_fwd_start(const char *host_inbox, const char *host_acks,
			  const char *m_inbox, int m_acks_fd,
			  al_sb_inbox_fwd **out);

/* Starts the forwarding thread (f: an al_sb_inbox_fwd; NULL or begun
 * before: nothing).  Called a tick into the run, from the run's
 * supervision loop (al_supervise_opts.later): most runs are over by
 * then, and a thread per run would cost each of them its start, its
 * wake-ups and its stop.  Not thread-safe against al_sb_inbox_fwd_stop:
 * call both from the thread that supervises the run.  A thread that
 * could not start is reported by al_sb_inbox_fwd_stop. */
void al_sb_inbox_fwd_begin(void *f);

/* Stops the thread (when begun), then a last sweep (the program is
 * over): every acknowledgement is in host_acks when this returns.  Frees
 * f (NULL is fine).  0, or a negative errno when a marker could not be
 * written or the thread could not begin. */
int al_sb_inbox_fwd_stop(al_sb_inbox_fwd *f);

#endif
