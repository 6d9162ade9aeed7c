/* Subdirectories spread over the file system.
 *
 * ext2/3/4 place a new directory near its parent, and its files near it.
 * Without a journal, ext4 then walks past every inode freed in that group
 * in the last minutes on each allocation (it does not reuse them yet), so
 * where runs are made and removed all day, each new inode costs more the
 * more were freed near it (docs/performance.md, "Inodes per durable
 * run").  A directory with the "top of hierarchy" flag has its
 * subdirectories placed like top-level ones: in a group with more free
 * inodes than average, where that walk is short. */
#include "core/dir_spread.h"

#include <linux/fs.h>
#include <sys/ioctl.h>

void al_dir_spread_children(int dirfd)
{
	int flags = 0;
	if (ioctl(dirfd, FS_IOC_GETFLAGS, &flags) == 0 &&
	    !(flags & FS_TOPDIR_FL)) {
		flags |= FS_TOPDIR_FL;
		(void)ioctl(dirfd, FS_IOC_SETFLAGS, &flags);
	}
}
