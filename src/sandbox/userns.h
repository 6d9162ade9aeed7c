/* Internal: user namespace id maps and uid slots. */
#ifndef AL_SANDBOX_USERNS_H
#define AL_SANDBOX_USERNS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Maps uid/gid 0 inside the user namespace of process `pid` (0: the
 * caller) to one host uid/gid, with setgroups denied.  Async-signal-safe. */
int al_sb_write_idmaps(pid_t pid, uid_t host_uid, gid_t host_gid);

/* Host uids for runs, one per live run on the whole host, so runs cannot
 * signal or read each other's processes and files: uid U is taken while
 * its byte (offset U) of AL_SB_UID_LOCK_FILE carries an open-file-
 * description write lock, held by the run for its lifetime (released by
 * al_sb_uid_give, or by the kernel when the process dies).  Every airlock
 * process and every handle share the file, whatever their uid ranges.
 * Root only (unprivileged runs use the caller's own uid). */
#define AL_SB_UID_LOCK_DIR "/run/airlock"
#define AL_SB_UID_LOCK_FILE AL_SB_UID_LOCK_DIR "/uid-pool.lock"

typedef struct al_sb_uid {
	uid_t uid;
	int fd; /* holds the lock; -1 when none */
} al_sb_uid;

/* 0 when the lock file can be used (the probe's check), else a negative
 * errno. */
int al_sb_uid_pool_check(void);

/* The first free uid of [base, base + count): 0, -EAGAIN when all are
 * taken, another negative errno when the lock file is unusable. */
int al_sb_uid_take(uint32_t base, uint32_t count, al_sb_uid *out);
void al_sb_uid_give(al_sb_uid *u);

#endif
