/* The host database's VFS: SQLite's "unix" one, with the directory sync of
 * an already durable WAL left out (see db_vfs.h).
 *
 * SQLite's unix VFS opens the WAL with SQLITE_OPEN_CREATE in every
 * process and then fsyncs the WAL's directory at that file's first sync,
 * because it cannot know whether it created the file.  We can: a mark on
 * the inode, set only after the directory was synced with the inode in
 * it.  The mark never claims more than that: it is set through a
 * descriptor opened before our own directory fsync, so the inode it marks
 * was linked when the sync began; a replaced WAL is a new inode without
 * it. */
#include "host/db_vfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <sqlite3.h>

#define AL_DB_VFS_NAME "airlock-unix"
#define WAL_MARK "user.airlock.dir_synced"

static sqlite3_vfs shim;
static sqlite3_vfs *base;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int registered;

/* 1 marked, 0 not marked, -1 the file system keeps no user xattrs. */
static int mark_state(int fd)
{
	char v[2];
	ssize_t n = fgetxattr(fd, WAL_MARK, v, sizeof(v));
	if (n == 1 && v[0] == '1')
		return 1;
	if (n < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP))
		return -1;
	return 0;
}

bool al_db_wal_marked(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool m = mark_state(fd) == 1;
	close(fd);
	return m;
}

static int sync_dir_of(const char *path)
{
	char dir[PATH_MAX];
	size_t n = strlen(path);
	if (n >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, n + 1);
	char *slash = strrchr(dir, '/');
	if (slash == NULL)
		return -EINVAL; /* SQLite passes full path names */
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int rc = fsync(fd) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* After SQLite opened (maybe created) the WAL: the inode now named by
 * path, opened before the directory is synced, is marked once the sync
 * has completed.  Failures only mean the next process syncs again. */
static void mark_after_dir_sync(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	if (mark_state(fd) == 0 && sync_dir_of(path) == 0)
		(void)fsetxattr(fd, WAL_MARK, "1", 1, 0);
	close(fd);
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* An existing, marked WAL opened without SQLITE_OPEN_CREATE.  SQLITE_OK
 * only when what SQLite opened is the marked inode: we hold that inode
 * open, so its number cannot be reused, and the path names it before and
 * after SQLite's open, so it named it at that open too. */
static int open_marked(const char *name, sqlite3_file *f, int flags,
		       int *out_flags)
{
	int mine = open(name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (mine < 0)
		return SQLITE_CANTOPEN;
	struct stat a, b;
	int rc = SQLITE_CANTOPEN;
	if (mark_state(mine) != 1 || fstat(mine, &a) < 0)
		goto out;
	rc = base->xOpen(base, name, f, flags & ~SQLITE_OPEN_CREATE, out_flags);
	if (rc != SQLITE_OK)
		goto out;
	if (stat(name, &b) < 0 || !same_file(&a, &b)) {
		f->pMethods->xClose(f);
		f->pMethods = NULL;
		rc = SQLITE_CANTOPEN;
	}
out:
	close(mine);
	return rc;
}

static int shim_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f,
		     int flags, int *out_flags)
{
	(void)vfs;
	if (name == NULL || !(flags & SQLITE_OPEN_WAL) ||
	    !(flags & SQLITE_OPEN_CREATE))
		return base->xOpen(base, name, f, flags, out_flags);
	if (open_marked(name, f, flags, out_flags) == SQLITE_OK)
		return SQLITE_OK;
	/* New or unmarked: SQLite's own open, which syncs the directory at
	 * the file's first sync; marked for the processes after us. */
	int rc = base->xOpen(base, name, f, flags, out_flags);
	if (rc == SQLITE_OK)
		mark_after_dir_sync(name);
	return rc;
}

static void register_shim(void)
{
	/* Before SQLite initialises (sqlite3_vfs_find does): no page-cache
	 * bulk.  By default each cache's first page allocates 20 slots and
	 * writes a header into every one, ~36 pages of memory touched in
	 * every process that opens the database, most of which a CLI run
	 * never uses (docs/performance.md, "Pages a CLI process touches").
	 * Refused (SQLITE_MISUSE) where the embedding program has already
	 * initialised SQLite: then its settings stand. */
	(void)sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)NULL, 0, 0);
	base = sqlite3_vfs_find("unix");
	if (base == NULL)
		return;
	shim = *base; /* pAppData (the locking style) and every other call */
	shim.pNext = NULL;
	shim.zName = AL_DB_VFS_NAME;
	shim.xOpen = shim_open;
	registered = sqlite3_vfs_register(&shim, 0) == SQLITE_OK;
}

const char *al_db_vfs(void)
{
	pthread_once(&once, register_shim);
	return registered ? AL_DB_VFS_NAME : NULL;
}
