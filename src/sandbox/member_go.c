/* A warm member's program between its ready and its execve (member_go.h).
 * It runs after the seccomp filter and Landlock, as the run's uid with no
 * capability, either in a copy of the member's caller or as
 * airlock-sandbox-init's waiter: only reads, setrlimit, the open of
 * /dev/null and the execve. */
#include "sandbox/member_go.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "sandbox/launch_proto.h"

static _Noreturn void go_fail(int fd, int stage, int err, int op)
{
	struct al_sb_fail_msg m = {stage, err, op};
	ssize_t w = write(fd, &m, sizeof(m));
	(void)w;
	_exit(126);
}

static int read_full(int fd, char *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t n = read(fd, buf + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

static unsigned long long parse_u(const char *s)
{
	unsigned long long v = 0;
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (unsigned long long)(*s - '0');
	return v;
}

/* The header's next field, or a report and exit when there is none. */
static const char *next_field(const char **p, const char *end, int ff)
{
	*p += strlen(*p) + 1;
	if (*p >= end)
		go_fail(ff, ST_GO, EPROTO, 1);
	return *p;
}

_Noreturn void al_sb_member_go(int ff, char *buf, size_t cap, char **ptrs,
			       size_t nptrs)
{
	struct al_sb_fail_msg ready = {ST_READY, 0, READY_MEMBER};
	if (write(ff, &ready, sizeof(ready)) != (ssize_t)sizeof(ready))
		_exit(126);
	char head[AL_SB_GO_LEN_DIGITS + 1] = {0};
	if (read_full(0, head, AL_SB_GO_LEN_DIGITS) < 0)
		_exit(126); /* never told to go: nothing ran */
	size_t n = (size_t)parse_u(head);
	if (n == 0 || n >= cap || read_full(0, buf, n) < 0)
		go_fail(ff, ST_GO, EPROTO, 0);
	buf[n] = '\0';
	const char *p = buf, *end = buf + n;
	bool keep_stdin = p[0] == '1';
	size_t nrl = (size_t)parse_u(next_field(&p, end, ff));
	for (size_t i = 0; i < nrl; i++) {
		int res = (int)parse_u(next_field(&p, end, ff));
		rlim_t v = (rlim_t)parse_u(next_field(&p, end, ff));
		struct rlimit rl = {v, res == RLIMIT_CPU ? v + 1 : v};
		if (setrlimit(res, &rl) < 0)
			go_fail(ff, ST_RLIMIT, errno, (int)i);
	}
	size_t argc = (size_t)parse_u(next_field(&p, end, ff));
	size_t k = 0;
	for (size_t i = 0; i < argc && k + 2 < nptrs; i++)
		ptrs[k++] = (char *)next_field(&p, end, ff);
	if (argc == 0 || k != argc)
		go_fail(ff, ST_GO, EPROTO, 2);
	ptrs[k++] = NULL;
	char **envp = &ptrs[k];
	for (p += strlen(p) + 1; p < end && k + 1 < nptrs; p += strlen(p) + 1)
		ptrs[k++] = (char *)p;
	if (p < end)
		go_fail(ff, ST_GO, E2BIG, 3);
	ptrs[k] = NULL;
	if (!keep_stdin) {
		int z = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (z < 0 || dup2(z, 0) < 0)
			go_fail(ff, ST_STDIO, errno, 1);
		close(z);
	}
	/* The waiter inherited the fail pipe without close-on-exec: the
	 * program must not (its exec closing it is the parent's "started"). */
	if (fcntl(ff, F_SETFD, FD_CLOEXEC) < 0)
		go_fail(ff, ST_EXEC, errno, 3);
	execve(ptrs[0], ptrs, envp);
	go_fail(ff, ST_EXEC, errno, 0);
}
