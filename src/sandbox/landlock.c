/* Landlock for the sandboxed program.
 *
 * The system headers may predate the network and scope rights, so the
 * needed constants and the ABI-6 ruleset attribute are declared here; the
 * values are the kernel's UAPI. */
#include "sandbox/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#define AL_LL_NET_BIND_TCP (1ULL << 0)
#define AL_LL_NET_CONNECT_TCP (1ULL << 1)
#define AL_LL_SCOPE_ABSTRACT_UNIX (1ULL << 0)
#define AL_LL_SCOPE_SIGNAL (1ULL << 1)

struct al_ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net; /* ABI >= 4 */
	uint64_t scoped;	     /* ABI >= 6 */
};

int al_sb_landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0,
			 LANDLOCK_CREATE_RULESET_VERSION);
	return v < 0 ? 0 : (int)v;
}

static uint64_t fs_rights(int abi)
{
	uint64_t r = (1ULL << 13) - 1; /* ABI 1: EXECUTE .. MAKE_SYM */
	if (abi >= 2)
		r |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		r |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return r;
}

#define READ_RIGHTS                                                          \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |         \
	 LANDLOCK_ACCESS_FS_READ_DIR)
#define DEV_NODE_RIGHTS                                                      \
	(LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |      \
	 LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)
#define WRITE_RIGHTS                                                         \
	(READ_RIGHTS | LANDLOCK_ACCESS_FS_WRITE_FILE |                       \
	 LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |    \
	 LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |         \
	 LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |       \
	 LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_REFER |            \
	 LANDLOCK_ACCESS_FS_TRUNCATE)

static int allow_path(int ruleset, const char *path, uint64_t access,
		      uint64_t handled)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	struct landlock_path_beneath_attr pb = {
		.allowed_access = access & handled,
		.parent_fd = fd,
	};
	int rc = 0;
	if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH,
		    &pb, 0) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int al_sb_landlock_apply(const al_sb_landlock_spec *spec)
{
	if (spec->abi <= 0)
		return 0;
	uint64_t handled = fs_rights(spec->abi);
	struct al_ll_ruleset_attr attr = {.handled_access_fs = handled};
	size_t size = sizeof(uint64_t);
	if (spec->abi >= 4) {
		size = 2 * sizeof(uint64_t);
		if (spec->deny_tcp)
			attr.handled_access_net =
				AL_LL_NET_BIND_TCP | AL_LL_NET_CONNECT_TCP;
	}
	if (spec->abi >= 6) {
		size = sizeof(attr);
		attr.scoped = AL_LL_SCOPE_ABSTRACT_UNIX | AL_LL_SCOPE_SIGNAL;
	}
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (rs < 0)
		return -errno;
	int rc = allow_path(rs, "/", READ_RIGHTS, handled);
	if (rc == 0)
		rc = allow_path(rs, "/tmp", WRITE_RIGHTS, handled);
	if (rc == 0)
		rc = allow_path(rs, "/dev/shm", WRITE_RIGHTS, handled);
	static const char *const nodes[] = {"/dev/null", "/dev/zero",
					    "/dev/full", "/dev/random",
					    "/dev/urandom"};
	for (size_t i = 0; rc == 0 && i < sizeof(nodes) / sizeof(nodes[0]); i++)
		rc = allow_path(rs, nodes[i], DEV_NODE_RIGHTS, handled);
	if (rc == 0 && spec->workspace_rw)
		rc = allow_path(rs, "/workspace", WRITE_RIGHTS, handled);
	if (rc == 0 && spec->build_rw)
		rc = allow_path(rs, "/build", WRITE_RIGHTS, handled);
	if (rc == 0 && spec->inbox_acks_rw)
		rc = allow_path(rs, "/inbox-acks", WRITE_RIGHTS, handled);
	if (rc == 0 && syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		rc = -errno;
	close(rs);
	return rc;
}
