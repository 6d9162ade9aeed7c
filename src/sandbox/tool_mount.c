/* The toolbelt's token for a sandboxed run (see tool_mount.h). */
#include "sandbox/tool_mount.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool/proto.h"

int al_sb_tool_own(const char *tool_dir, uid_t uid)
{
	int dfd = open(tool_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int fd = openat(dfd, AL_TOOL_TOKEN_NAME,
			O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	int rc = fd < 0 || fchown(fd, uid, (gid_t)uid) < 0 ||
			 fchmod(fd, 0600) < 0
		 ? -errno
		 : 0;
	if (fd >= 0)
		close(fd);
	close(dfd);
	return rc;
}
