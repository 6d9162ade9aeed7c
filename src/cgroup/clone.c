/* Placing a child into a cgroup at clone time (see cgroup.h). */
#include "cgroup/cgroup.h"

#include <errno.h>
#include <linux/sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

pid_t al_cg_clone3(struct clone_args *ca, int cg_dirfd, bool *placed)
{
	*placed = false;
	if (cg_dirfd >= 0) {
		ca->flags |= CLONE_INTO_CGROUP;
		ca->cgroup = (uint64_t)cg_dirfd;
		pid_t pid = (pid_t)syscall(SYS_clone3, ca, sizeof(*ca));
		if (pid >= 0) {
			*placed = true;
			return pid;
		}
		if (errno == ENOMEM || errno == EAGAIN)
			return -1;
		/* Refused: clone plainly, the caller joins it afterwards. */
		ca->flags &= ~(uint64_t)CLONE_INTO_CGROUP;
		ca->cgroup = 0;
	}
	return (pid_t)syscall(SYS_clone3, ca, sizeof(*ca));
}
