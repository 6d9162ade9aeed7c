/* Internal: the sandbox's airlock-init (src/sbinit/main.c) as a
 * descriptor the init can execute.
 *
 * The program is embedded in libairlock (init_image.S) and copied once
 * per process into a sealed memfd, executable but not readable by anyone
 * but root: the kernel starts a program its user may not read as not
 * dumpable, so from its first instruction the run's program (same uid)
 * can neither ptrace it nor read its memory through /proc/1.  Nothing is
 * looked up on the disk, so it works the same in the CLI, the daemon and
 * an embedding host, inside any view the mount plan builds. */
#ifndef AL_SANDBOX_INIT_IMAGE_H
#define AL_SANDBOX_INIT_IMAGE_H

#include <stdint.h>

/* The embedded program (init_image.S) and its length in bytes. */
extern const unsigned char al_sb_init_image[];
extern const uint64_t al_sb_init_image_bytes;

/* The memfd (close-on-exec, process-wide, never closed), made on first
 * use; a negative errno when this kernel cannot execute one (ENOSYS,
 * EACCES under vm.memfd_noexec = 2): the caller starts its init the
 * older way. */
int al_sb_init_image_fd(void);

#endif
