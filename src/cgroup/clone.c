/* Placing a child into a cgroup at clone time (see cgroup.h). */
#include "cgroup/cgroup.h"

#include <errno.h>
#include <linux/sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clone_vm.h"

/* How the child is made: a plain clone3, or vfork-style (vm). */
struct how {
	int (*fn)(void *);
	void *arg;
	void *stack;
	size_t size;
};

static pid_t clone_once(struct clone_args *ca, const struct how *h)
{
	if (h == NULL)
		return (pid_t)syscall(SYS_clone3, ca, sizeof(*ca));
	return al_clone3_vm(ca, h->fn, h->arg, h->stack, h->size);
}

static pid_t clone_placed(struct clone_args *ca, int cg_dirfd, bool *placed,
			  const struct how *h)
{
	*placed = false;
	if (cg_dirfd >= 0) {
		ca->flags |= CLONE_INTO_CGROUP;
		ca->cgroup = (uint64_t)cg_dirfd;
		pid_t pid = clone_once(ca, h);
		if (pid >= 0) {
			*placed = true;
			return pid;
		}
		if (errno == ENOMEM || errno == EAGAIN || errno == ENOSYS)
			return -1;
		/* Refused: clone plainly, the caller joins it afterwards. */
		ca->flags &= ~(uint64_t)CLONE_INTO_CGROUP;
		ca->cgroup = 0;
	}
	return clone_once(ca, h);
}

pid_t al_cg_clone3(struct clone_args *ca, int cg_dirfd, bool *placed)
{
	return clone_placed(ca, cg_dirfd, placed, NULL);
}

pid_t al_cg_clone3_vm(struct clone_args *ca, int cg_dirfd, bool *placed,
		      int (*fn)(void *), void *arg, void *stack, size_t size)
{
	struct how h = {fn, arg, stack, size};
	return clone_placed(ca, cg_dirfd, placed, &h);
}
