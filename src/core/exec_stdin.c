/* An interactive run's live stdin in al_exec (include/airlock/provider.h,
 * docs/compat.md).  The members sit at the struct's end, so they are read
 * only when the host that filled it was built with them. */
#include <stddef.h>

#include <airlock/provider.h>

int al_exec_stdin_fd(const al_exec *exec)
{
	if (exec == NULL)
		return -1;
	if (exec->struct_size != 0 &&
	    exec->struct_size < offsetof(al_exec, stdin_fd) + sizeof(int))
		return -1;
	return exec->stdin_stream ? exec->stdin_fd : -1;
}
