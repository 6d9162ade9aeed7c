/* Process identity beyond the pid (see identity.h). */
#include "supervisor/identity.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

int al_nonce_new(char out[AL_NONCE_HEX + 1])
{
	unsigned char raw[AL_NONCE_HEX / 2];
	size_t got = 0;
	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

bool al_nonce_valid(const char *s)
{
	if (s == NULL || strlen(s) != AL_NONCE_HEX)
		return false;
	for (size_t i = 0; i < AL_NONCE_HEX; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static ssize_t read_proc(pid_t pid, const char *what, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got < len - 1) {
		ssize_t n = read(fd, buf + got, len - 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

int al_proc_stat(pid_t pid, uint64_t *starttime, char *state)
{
	char buf[1024];
	if (pid <= 0 || read_proc(pid, "stat", buf, sizeof(buf)) <= 0)
		return -ESRCH;
	/* comm may hold spaces and parentheses: fields resume after the
	 * last ')'.  Field 3 is the state, field 22 the start time. */
	char *p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ')
		return -ESRCH;
	p += 2;
	if (state != NULL)
		*state = *p;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (p == NULL)
			return -ESRCH;
		p++;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 10);
	if (errno != 0 || end == p)
		return -ESRCH;
	*starttime = v;
	return 0;
}

bool al_proc_has_nonce(pid_t pid, const char *nonce)
{
	char buf[4096];
	ssize_t n = read_proc(pid, "cmdline", buf, sizeof(buf));
	bool supervise = false, match = false;
	if (n <= 0 || !al_nonce_valid(nonce))
		return false;
	for (ssize_t off = 0; off < n;) {
		const char *arg = buf + off;
		size_t len = strnlen(arg, (size_t)(n - off));
		if (strcmp(arg, "supervise") == 0)
			supervise = true;
		if (strcmp(arg, "--nonce") == 0 && off + (ssize_t)len + 1 < n)
			match = strcmp(arg + len + 1, nonce) == 0;
		off += (ssize_t)len + 1;
	}
	return supervise && match;
}

int al_identity_verify(const al_identity *id, const char *nonce)
{
	uint64_t st;
	char state;
	if (al_proc_stat(id->pid, &st, &state) < 0 || st != id->starttime ||
	    state == 'Z' || state == 'X' || !al_proc_has_nonce(id->pid, nonce))
		return -ESRCH;
	return 0;
}

int al_identity_pidfd(const al_identity *id, const char *nonce, int *pidfd)
{
	*pidfd = -1;
	if (id->pid <= 0)
		return -ESRCH;
	int fd = (int)syscall(SYS_pidfd_open, id->pid, 0);
	if (fd < 0)
		return errno == ENOSYS ? -ENOSYS : -ESRCH;
	/* Checked after opening: the pidfd pins the process the check saw
	 * (a pid recycled before the open fails the check). */
	if (al_identity_verify(id, nonce) < 0) {
		close(fd);
		return -ESRCH;
	}
	*pidfd = fd;
	return 0;
}

int al_identity_signal(const al_identity *id, const char *nonce, int sig)
{
	int fd;
	int rc = al_identity_pidfd(id, nonce, &fd);
	if (rc < 0)
		return rc;
	rc = syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) == 0 ? 0 : -errno;
	close(fd);
	return rc;
}

/* The parent of pid, or 0. */
static pid_t proc_ppid(pid_t pid)
{
	char buf[512];
	ssize_t n = read_proc(pid, "stat", buf, sizeof(buf));
	if (n <= 0)
		return 0;
	buf[n < (ssize_t)sizeof(buf) ? n : (ssize_t)sizeof(buf) - 1] = '\0';
	const char *p = strrchr(buf, ')');
	long ppid = 0;
	if (p == NULL || sscanf(p + 1, " %*c %ld", &ppid) != 1)
		return 0;
	return (pid_t)ppid;
}

int al_identity_scan(const char *nonce, al_identity *out)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int rc = -ESRCH;
	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end != '\0' || pid <= 0)
			continue;
		if (!al_proc_has_nonce((pid_t)pid, nonce))
			continue;
		/* A fork of the supervisor that did not exec (the sandbox's
		 * init, a warm member) carries its argv too: not it. */
		pid_t pp = proc_ppid((pid_t)pid);
		if (pp > 0 && al_proc_has_nonce(pp, nonce))
			continue;
		al_identity id = {.pid = (pid_t)pid};
		char state;
		if (al_proc_stat(id.pid, &id.starttime, &state) < 0 ||
		    state == 'Z' || state == 'X')
			continue;
		*out = id;
		rc = 0;
		break;
	}
	closedir(d);
	return rc;
}
