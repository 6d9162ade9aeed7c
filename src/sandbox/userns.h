/* Internal: user namespace id maps and uid slots. */
#ifndef AL_SANDBOX_USERNS_H
#define AL_SANDBOX_USERNS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Maps uid/gid 0 inside the user namespace of process `pid` (0: the
 * caller) to one host uid/gid, with setgroups denied.  Async-signal-safe. */
int al_sb_write_idmaps(pid_t pid, uid_t host_uid, gid_t host_gid);

/* A thread-safe pool of host uids: one per concurrent run, so runs cannot
 * signal or read each other's processes and files. */
typedef struct al_sb_uidpool {
	pthread_mutex_t lock;
	uint32_t base;
	uint32_t count;
	unsigned char *used; /* count bytes */
} al_sb_uidpool;

int al_sb_uidpool_init(al_sb_uidpool *p, uint32_t base, uint32_t count);
void al_sb_uidpool_destroy(al_sb_uidpool *p);
/* 0 and *uid, or -EAGAIN when every slot is taken. */
int al_sb_uidpool_take(al_sb_uidpool *p, uid_t *uid);
void al_sb_uidpool_give(al_sb_uidpool *p, uid_t uid);

#endif
