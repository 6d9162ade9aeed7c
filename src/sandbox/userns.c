/* User namespace id maps and the pool of per-run host uids. */
#include "sandbox/userns.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int write_proc(pid_t pid, const char *file, const char *text)
{
	char path[64];
	if (pid == 0)
		snprintf(path, sizeof(path), "/proc/self/%s", file);
	else
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = strlen(text);
	ssize_t w = write(fd, text, len);
	int rc = w == (ssize_t)len ? 0 : (w < 0 ? -errno : -EIO);
	close(fd);
	return rc;
}

int al_sb_write_idmaps(pid_t pid, uid_t host_uid, gid_t host_gid)
{
	char line[64];
	int rc = write_proc(pid, "setgroups", "deny");
	if (rc < 0)
		return rc;
	snprintf(line, sizeof(line), "0 %u 1\n", (unsigned)host_uid);
	rc = write_proc(pid, "uid_map", line);
	if (rc < 0)
		return rc;
	snprintf(line, sizeof(line), "0 %u 1\n", (unsigned)host_gid);
	return write_proc(pid, "gid_map", line);
}

int al_sb_uidpool_init(al_sb_uidpool *p, uint32_t base, uint32_t count)
{
	memset(p, 0, sizeof(*p));
	if (count == 0)
		return -EINVAL;
	p->used = calloc(count, 1);
	if (p->used == NULL)
		return -ENOMEM;
	p->base = base;
	p->count = count;
	pthread_mutex_init(&p->lock, NULL);
	return 0;
}

void al_sb_uidpool_destroy(al_sb_uidpool *p)
{
	if (p->used == NULL)
		return;
	pthread_mutex_destroy(&p->lock);
	free(p->used);
	p->used = NULL;
}

int al_sb_uidpool_take(al_sb_uidpool *p, uid_t *uid)
{
	int rc = -EAGAIN;
	pthread_mutex_lock(&p->lock);
	for (uint32_t i = 0; i < p->count; i++)
		if (!p->used[i]) {
			p->used[i] = 1;
			*uid = (uid_t)(p->base + i);
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&p->lock);
	return rc;
}

void al_sb_uidpool_give(al_sb_uidpool *p, uid_t uid)
{
	pthread_mutex_lock(&p->lock);
	if (uid >= p->base && uid - p->base < p->count)
		p->used[uid - p->base] = 0;
	pthread_mutex_unlock(&p->lock);
}
