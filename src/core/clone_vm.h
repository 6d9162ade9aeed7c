/* Internal: clone3 vfork-style, the child borrowing the caller's memory
 * until its execve.
 *
 * A plain clone3 copies the caller's page tables and write-protects every
 * private page it has, so both sides take copy-on-write faults afterwards:
 * in a threaded daemon that is paid per child even when the child only
 * sets up descriptors and calls execve (docs/performance.md, "Children
 * that only exec").  glibc's clone() does CLONE_VM | CLONE_VFORK but not
 * clone3's arguments (CLONE_INTO_CGROUP); this is the same on clone3.
 *
 * The child runs fn(arg) on [stack, stack + size), sharing every page of
 * the caller, whose calling thread waits until the child has called
 * execve or ended (other threads go on).  So fn may only make system
 * calls on data prepared before the clone, must not return (it ends with
 * execve or _exit), and must not write anything the caller reads after,
 * errno of the calling thread aside.  Every signal is blocked in the child
 * as it starts (and in the caller meanwhile): fn sets its handlers to
 * SIG_DFL before it unblocks any, or a handler of the caller would run in
 * the caller's memory.
 *
 * Only x86-64 builds without a sanitizer have it (a sanitizer's runtime
 * does not expect a second process in its memory); elsewhere
 * al_clone3_vm fails with ENOSYS and the caller clones plainly. */
#ifndef AL_CORE_CLONE_VM_H
#define AL_CORE_CLONE_VM_H

#include <stddef.h>
#include <sys/types.h>

struct clone_args;

/* clone3(ca) with CLONE_VM | CLONE_VFORK added and ca's stack set to the
 * given one (size a multiple of 16, at least a few KiB).  Returns the
 * child's pid once it has called execve or ended, or -1 with errno (ENOSYS:
 * not available in this build). */
pid_t al_clone3_vm(struct clone_args *ca, int (*fn)(void *), void *arg,
		   void *stack, size_t size);

#endif
