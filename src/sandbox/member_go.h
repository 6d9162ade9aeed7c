/* Internal: a warm member's last step, shared by the member started as a
 * copy of its caller (src/sandbox/launch.c) and airlock-sandbox-init's
 * waiter (src/sbinit/main.c). */
#ifndef AL_SANDBOX_MEMBER_GO_H
#define AL_SANDBOX_MEMBER_GO_H

#include <stddef.h>

/* Reports READY_MEMBER on fail_fd, reads the header (launch_proto.h)
 * from fd 0 into buf (cap bytes) with ptrs (nptrs) for argv and envp,
 * sets the rlimits it names, puts /dev/null on fd 0 unless it keeps
 * stdin, and execs.  Never returns: a failure is reported on fail_fd
 * (ST_GO, ST_RLIMIT, ST_STDIO or ST_EXEC) and the process exits 126.
 * Only system calls on the buffers given: nothing is allocated. */
_Noreturn void al_sb_member_go(int fail_fd, char *buf, size_t cap,
			       char **ptrs, size_t nptrs);

#endif
