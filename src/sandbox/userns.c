/* User namespace id maps and the pool of per-run host uids. */
#include "sandbox/userns.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
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

static pthread_mutex_t uid_lock = PTHREAD_MUTEX_INITIALIZER;
static uid_t *taken;
static size_t n_taken, cap_taken;

static bool is_taken(uid_t uid)
{
	for (size_t i = 0; i < n_taken; i++)
		if (taken[i] == uid)
			return true;
	return false;
}

int al_sb_uid_take(uint32_t base, uint32_t count, uid_t *uid)
{
	int rc = -EAGAIN;
	pthread_mutex_lock(&uid_lock);
	if (n_taken == cap_taken) {
		size_t cap = cap_taken ? cap_taken * 2 : 16;
		uid_t *t = realloc(taken, cap * sizeof(*t));
		if (t == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		taken = t;
		cap_taken = cap;
	}
	for (uint32_t i = 0; i < count; i++) {
		uid_t u = (uid_t)(base + i);
		if (!is_taken(u)) {
			taken[n_taken++] = u;
			*uid = u;
			rc = 0;
			break;
		}
	}
out:
	pthread_mutex_unlock(&uid_lock);
	return rc;
}

void al_sb_uid_give(uid_t uid)
{
	pthread_mutex_lock(&uid_lock);
	for (size_t i = 0; i < n_taken; i++)
		if (taken[i] == uid) {
			taken[i] = taken[--n_taken];
			break;
		}
	if (n_taken == 0) {
		free(taken);
		taken = NULL;
		cap_taken = 0;
	}
	pthread_mutex_unlock(&uid_lock);
}
