/* The cgroup mounts, parsed again only after the mount table changed
 * (see mount_table.h). */
#include "cgroup/mount_table.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct entry {
	char *mnt, *root, *superopts;
	bool v2;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* The descriptor the table was read through: its POLLPRI says the mount
 * table changed since.  pid: the process that opened it; a forked copy
 * shares the open file, and polling it there would take the parent's
 * notice, so a child reads its own. */
static int table_fd = -1;
static pid_t table_pid;
static entry *table;
static size_t n_table;

static void forget(void)
{
	for (size_t i = 0; i < n_table; i++) {
		free(table[i].mnt);
		free(table[i].root);
		free(table[i].superopts);
	}
	free(table);
	table = NULL;
	n_table = 0;
	if (table_fd >= 0)
		close(table_fd); /* a child's close leaves the parent's open */
	table_fd = -1;
}

static bool still_current(void)
{
	if (table_fd < 0 || table_pid != getpid())
		return false;
	struct pollfd p = {.fd = table_fd, .events = POLLPRI};
	return poll(&p, 1, 0) >= 0 &&
	       !(p.revents & (POLLPRI | POLLERR | POLLNVAL));
}

static bool add(const char *mnt, const char *root, const char *superopts,
		bool v2)
{
	entry *n = realloc(table, (n_table + 1) * sizeof(*n));
	if (n == NULL)
		return false;
	table = n;
	entry *e = &table[n_table];
	e->mnt = strdup(mnt);
	e->root = strdup(root);
	e->superopts = strdup(superopts);
	e->v2 = v2;
	if (!e->mnt || !e->root || !e->superopts) {
		free(e->mnt);
		free(e->root);
		free(e->superopts);
		return false;
	}
	n_table++;
	return true;
}

/* Opens mountinfo, keeps the descriptor for the poll, and parses the
 * cgroup mounts through a second descriptor of the same open file (its
 * change notice is set at open, so a change while it is read is seen at
 * the next poll).  false: no table (nothing is kept). */
static bool load(void)
{
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	int rd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	FILE *f = rd >= 0 ? fdopen(rd, "re") : NULL;
	if (f == NULL) {
		if (rd >= 0)
			close(rd);
		close(fd);
		return false;
	}
	table_fd = fd;
	table_pid = getpid();
	bool ok = true;
	char line[8192];
	while (ok && fgets(line, sizeof(line), f)) {
		char root[4096], mnt[4096], fstype[64], superopts[1024];
		char *dash = strstr(line, " - ");
		if (dash == NULL)
			continue;
		if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2)
			continue;
		if (sscanf(dash + 3, "%63s %*s %1023s", fstype, superopts) != 2)
			continue;
		bool v2 = strcmp(fstype, "cgroup2") == 0;
		if (v2 || strcmp(fstype, "cgroup") == 0)
			ok = add(mnt, root, superopts, v2);
	}
	fclose(f);
	if (!ok)
		forget();
	return ok;
}

void al_cg_mounts_each(void (*fn)(const al_cg_mount *m, void *ctx),
		       void *ctx)
{
	pthread_mutex_lock(&lock);
	if (!still_current()) {
		forget();
		(void)load();
	}
	for (size_t i = 0; i < n_table; i++) {
		al_cg_mount m = {.mnt = table[i].mnt,
				 .root = table[i].root,
				 .superopts = table[i].superopts,
				 .v2 = table[i].v2};
		fn(&m, ctx);
	}
	pthread_mutex_unlock(&lock);
}
