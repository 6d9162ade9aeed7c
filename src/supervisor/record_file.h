/* Internal: small durable-file helpers for a run's directory.
 *
 * Every record a crash must not tear is written whole to a private temp
 * file, fsynced, renamed over its name and the directory fsynced, so a
 * reader sees the old content or the new one, never a mix.  Reads never
 * follow links and are bounded. */
#ifndef AL_SUPERVISOR_RECORD_FILE_H
#define AL_SUPERVISOR_RECORD_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

/* Writes name under dirfd atomically and durably with the given mode. */
int al_record_file_write(int dirfd, const char *name, const void *data, size_t len,
		   mode_t mode);
/* The same for a JSON value (compact text, keys in insertion order). */
int al_record_file_write_json(int dirfd, const char *name, const json_t *v,
			mode_t mode);
/* How much of that a write needs:
 * DURABLE: file and directory synced (the default above);
 * FILE_ONLY: the file synced, not the directory — for a batch of records
 *   in one directory that a DURABLE write in the same directory ends (its
 *   directory sync covers every entry);
 * ATOMIC: neither — whole or absent for a reader, but lost with the page
 *   cache (for records that only matter while processes live). */
typedef enum al_record_file_how {
	AL_RECORD_FILE_DURABLE = 0,
	AL_RECORD_FILE_FILE_ONLY,
	AL_RECORD_FILE_ATOMIC
} al_record_file_how;
int al_record_file_write_how(int dirfd, const char *name, const void *data,
		       size_t len, mode_t mode, al_record_file_how how);
int al_record_file_write_json_how(int dirfd, const char *name, const json_t *v,
			    mode_t mode, al_record_file_how how);
/* Empty files made ahead in a directory (a run's, by the daemon's spare
 * maker: docs/durability.md, "Run directories made ahead").  A write
 * above renames one to its temp name instead of creating the temp, so
 * no inode is allocated on the request's path; without one it creates
 * the temp as before.  al_record_file_blanks_drop removes those left. */
#define AL_RECORD_FILE_BLANKS 3u
/* Bytes allocated ahead in each (a run's records are smaller). */
#define AL_RECORD_FILE_BLANK_BYTES 4096
int al_record_file_blanks_make(int dirfd);
void al_record_file_blanks_drop(int dirfd);
/* Space taken ahead for a record that must be written when the file
 * system may be full (fallocate: writing inside it needs no new blocks).
 * `tmp` is the reserved file's own name in the directory. */
typedef struct al_record_file_reserve {
	int fd; /* -1 when none */
	size_t size;
	/* tmp was made ahead (al_record_file_reserve_make) and its entry
	 * synced with the directory: a commit syncs the file alone */
	bool entry_durable;
	char tmp[64];
} al_record_file_reserve;
/* Makes tmp (0600, new) with size bytes allocated and closes it, for a
 * later al_record_file_reserve_open; the caller syncs the directory.
 * On failure nothing is left (negative errno). */
int al_record_file_reserve_make(int dirfd, const char *tmp, size_t size);
/* Opens tmp when made ahead with this size, else creates it (0600) with
 * size bytes allocated; on failure r->fd is -1 and the negative errno is
 * returned (the caller goes on without). */
int al_record_file_reserve_open(int dirfd, const char *tmp, size_t size,
			  al_record_file_reserve *r);
/* Writes data into the reserved space and renames it over name; the
 * reserve is used up.  Durable on return: the file is synced, and the
 * directory too unless the reserve was made ahead (its entry is durable
 * already, and until the rename reaches the disk
 * al_record_file_settle finds the record under tmp).  -EFBIG when data
 * does not fit. */
int al_record_file_reserve_commit(int dirfd, al_record_file_reserve *r, const char *name,
			    const void *data, size_t len);
/* Syncs the file name (its data) and then the directory (every entry in
 * it): what al_record_file_write would have synced, done later. */
int al_record_file_sync_named(int dirfd, const char *name);
/* For a reader after the writer is gone: when name is absent and tmp
 * holds one whole JSON object (a commit whose rename was lost), renames
 * tmp over name and syncs the directory.  1 when it did, 0 when there
 * was nothing to settle, negative errno. */
int al_record_file_settle(int dirfd, const char *tmp, const char *name,
			  size_t max);
/* Gives the space back (removes the reserved file). */
void al_record_file_reserve_drop(int dirfd, al_record_file_reserve *r);
/* true for the errors of a full file system or quota. */
bool al_record_file_no_space(int err);

/* Reads a regular file (not a link) of at most max bytes, NUL-terminated.
 * -ENOENT when absent, -EFBIG when larger, -EINVAL when not a regular
 * file. */
int al_record_file_read(int dirfd, const char *name, size_t max, char **out,
		  size_t *len);
/* Reads and parses a JSON object (-EBADMSG when it is not one). */
int al_record_file_read_json(int dirfd, const char *name, size_t max,
		       json_t **out);
/* true when name exists (a link counts; it is not followed). */
bool al_record_file_exists(int dirfd, const char *name);
/* Creates name empty (O_EXCL) and durably; 1 when it already existed. */
int al_record_file_touch(int dirfd, const char *name);
int al_record_file_sync_dir(int dirfd);

/* A text number ("123\n"); -EBADMSG when malformed. */
int al_record_file_read_u64(int dirfd, const char *name, uint64_t *out);
int al_record_file_write_u64(int dirfd, const char *name, uint64_t v);
int al_record_file_write_u64_how(int dirfd, const char *name, uint64_t v,
			   al_record_file_how how);

/* Takes the exclusive lock of a directory's lock file `name` (created
 * 0600 when missing).  Returns the fd holding it (close to release). */
int al_record_file_lock(int dirfd, const char *name);
/* The same on the directory itself (no lock file to create). */
int al_record_file_lock_dir(int dirfd);
/* The exclusive lock on fd (a directory's own descriptor), waited for
 * wait_ms at most: 0, -EWOULDBLOCK when another still holds it, or
 * -errno. */
int al_record_file_lock_wait(int fd, int wait_ms);

#endif
