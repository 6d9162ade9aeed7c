/* Internal: a run's private directory on the host.
 *
 * RUN/code/<script> (the request's code, 0444), RUN/workspace, RUN/tmp;
 * RUN itself is 0700 under a per-user base directory that must be ours
 * and not a link.  Removal never follows links the program may have
 * planted. */
#ifndef AL_PROC_RUNDIR_H
#define AL_PROC_RUNDIR_H

#include <airlock/contract.h>
#include <airlock/error.h>

typedef struct al_rundir {
	char *root;
	char *code_dir;
	char *workspace;
	char *tmp;
	char *script_path; /* set by al_rundir_write_code */
} al_rundir;

/* base NULL: $AIRLOCK_RUN_BASE, else $TMPDIR or /tmp, + "/airlock-<uid>". */
int al_rundir_create(const char *base, const char *run_id, al_rundir *out,
		     al_error **err);
int al_rundir_write_code(al_rundir *rd, const char *script_name,
			 const al_bytes *code, al_error **err);
/* Removes the tree (without following links) and frees the paths. */
int al_rundir_remove(al_rundir *rd);
/* Removes dir_fd's contents recursively, never following links. */
int al_remove_tree_at(int parent_fd, const char *name);

#endif
