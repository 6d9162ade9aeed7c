/* clone3 vfork-style (see clone_vm.h). */
#include "core/clone_vm.h"

#include <errno.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CLONE_VM_USABLE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define CLONE_VM_USABLE 0
#endif
#endif
#if !defined(CLONE_VM_USABLE) && defined(__x86_64__)
#define CLONE_VM_USABLE 1
#endif
#if !defined(CLONE_VM_USABLE)
#define CLONE_VM_USABLE 0
#endif

#define STR_(x) #x
#define STR(x) STR_(x)

#if CLONE_VM_USABLE
/* long clone3_vm_raw(struct clone_args *ca, size_t size,
 *                    int (*fn)(void *), void *arg)
 *
 * The system call returns twice, the child on its new stack, where it
 * cannot return into C: it calls fn(arg) from here and exits with its
 * value (exit_group: the child is a process of its own).  fn and arg wait in r8 and r9, which the system call keeps and
 * the caller's ABI does not need kept.  The parent gets the pid or
 * -errno. */
__asm__(".text\n"
	".p2align 4\n"
	".type clone3_vm_raw, @function\n"
	"clone3_vm_raw:\n"
	"	mov %rdx, %r8\n"
	"	mov %rcx, %r9\n"
	"	mov $" STR(__NR_clone3) ", %eax\n"
	"	syscall\n"
	"	test %rax, %rax\n"
	"	jz 1f\n"
	"	ret\n"
	"1:	xor %ebp, %ebp\n"
	"	mov %r9, %rdi\n"
	"	call *%r8\n"
	"	mov %eax, %edi\n"
	"	mov $" STR(__NR_exit_group) ", %eax\n"
	"	syscall\n"
	"	hlt\n"
	".size clone3_vm_raw, .-clone3_vm_raw\n");
long clone3_vm_raw(struct clone_args *ca, size_t size, int (*fn)(void *),
		   void *arg);
#endif

pid_t al_clone3_vm(struct clone_args *ca, int (*fn)(void *), void *arg,
		   void *stack, size_t size)
{
#if CLONE_VM_USABLE
	ca->flags |= CLONE_VM | CLONE_VFORK;
	ca->stack = (uint64_t)(uintptr_t)stack;
	ca->stack_size = size & ~(size_t)15;
	sigset_t all, old;
	sigfillset(&all);
	/* The raw call: glibc's wrapper leaves out its own two signals. */
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, _NSIG / 8);
	long pid = clone3_vm_raw(ca, sizeof(*ca), fn, arg);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, _NSIG / 8);
	if (pid < 0) {
		errno = (int)-pid;
		return -1;
	}
	return (pid_t)pid;
#else
	(void)ca;
	(void)fn;
	(void)arg;
	(void)stack;
	(void)size;
	errno = ENOSYS;
	return -1;
#endif
}
