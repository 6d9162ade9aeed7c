/* Internal: opening paths beneath a directory descriptor without ever
 * following a link (openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS), and creating files and directories the same
 * way.  Used wherever the host touches a tree a program could have
 * changed: a workspace, an artifact store, an outputs directory. */
#ifndef AL_BUNDLE_BENEATH_H
#define AL_BUNDLE_BENEATH_H

#include <stdbool.h>
#include <sys/types.h>

/* openat2(dirfd, path, flags | O_CLOEXEC | O_NOFOLLOW, mode=0) with the
 * three RESOLVE_ flags.  The fd, or -errno (ELOOP: a link on the way or
 * at the end; EXDEV: the path would leave dirfd).  Where openat2 does not
 * exist (ENOSYS: kernels before 5.6, valgrind), the same walk is done one
 * segment at a time, each opened O_NOFOLLOW beneath the last, with "..",
 * absolute and empty segments refused (so it cannot leave dirfd); with
 * O_PATH the last segment may then be a link itself, as with openat2 —
 * callers check the type with fstat. */
int al_open_beneath(int dirfd, const char *path, int flags);

/* Tests only: use the segment walk even where openat2 exists. */
void al_beneath_force_walk(bool on);

/* Opens the directory that holds `rel` (a relative clean path) beneath
 * dirfd, creating missing parents with mode 0755 when create (owned by
 * uid/gid when uid is not (uid_t)-1).  *parent: a new O_DIRECTORY fd;
 * *base: the last segment of rel.  0 or -errno. */
int al_open_parent_beneath(int dirfd, const char *rel, bool create,
			   uid_t uid, gid_t gid, int *parent,
			   const char **base);

#endif
