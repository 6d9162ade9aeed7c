/* Internal: trust in the state directory (docs/threat-model.md, "Trust in
 * files").  The state directory holds the audit trail, stored results and
 * output, tokens: everything in it is trusted only when the directory is
 * the running user's and private, and the database files in it are
 * regular files of ours, opened without following a link. */
#ifndef AL_HOST_STATE_DIR_H
#define AL_HOST_STATE_DIR_H

#include <stdbool.h>

#include <airlock/error.h>

/* 0 when state_dir is a directory owned by the effective user with no
 * permission bits for group or others; else a typed error
 * (AL_ERR_UNAVAILABLE, reason "state_dir_untrusted") naming the problem
 * and, for loose permissions, the chmod that fixes them. */
int al_state_dir_check(const char *state_dir, al_error **err);

/* Checks the database files under the (checked) state directory:
 * airlock.db (created empty with mode 0600 when create and missing) and
 * its -wal and -shm when present must be regular files of ours, not
 * links, with one name; files older versions left 0644 are tightened to
 * 0600.  SQLite creates -wal and -shm with the database's mode. */
int al_state_db_files_check(const char *state_dir, bool create,
			    al_error **err);

#endif
