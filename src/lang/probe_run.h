/* Internal: runs one toolchain probe command and captures its stdout.
 *
 * Used only for our own probe commands (version flags, "print your own
 * executable" one-liners), never for request code.  No shell: argv[0] is
 * an absolute path.  The child gets stdin and stderr on /dev/null, a fixed
 * small environment, cwd "/", and its own process group so a timeout can
 * kill everything it started (version-manager shims fork helpers).
 */
#ifndef AL_LANG_PROBE_RUN_H
#define AL_LANG_PROBE_RUN_H

#include <stddef.h>

/* Runs argv with environment envp, waits at most timeout_ms for it to
 * exit.  On 0, *out is the NUL-terminated stdout (at most max_out bytes,
 * more is an error) and *exit_status the exit code.  -ETIMEDOUT when it
 * ran too long (the group is killed and reaped), -EFBIG for too much
 * output, another negative errno when it could not be started. */
int al_probe_run(char *const argv[], char *const envp[], int timeout_ms,
		 size_t max_out, char **out, int *exit_status);

#endif
