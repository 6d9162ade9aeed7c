/* Internal: the VFS the host database opens with ("airlock-unix"): SQLite's
 * own "unix" VFS, except that a write-ahead log whose name is already
 * known durable in its directory is opened without SQLITE_OPEN_CREATE, so
 * SQLite does not fsync the directory again at the first sync of every
 * process (one disk flush per CLI run).
 *
 * Known durable means: the WAL file carries the extended attribute
 * user.airlock.dir_synced, which is set only on an inode that was linked
 * in the directory before a completed fsync of that directory.  A new WAL
 * file (a new inode) has no mark, so it is opened with SQLITE_OPEN_CREATE
 * as before (SQLite syncs the directory) and marked after an fsync of the
 * directory of our own.  Where the file system has no user xattrs nothing
 * is marked and every open is SQLite's own. */
#ifndef AL_HOST_DB_VFS_H
#define AL_HOST_DB_VFS_H

#include <stdbool.h>

/* The name to pass to sqlite3_open_v2, or NULL (SQLite's default VFS)
 * when it could not be registered. */
const char *al_db_vfs(void);

/* Whether path is a WAL file marked as durable in its directory (tests
 * and diagnostics). */
bool al_db_wal_marked(const char *path);

#endif
