/* Internal: a run's private directory on the host.
 *
 * RUN/code/<script> (the request's code, 0444), RUN/workspace, RUN/tmp,
 * RUN/.airlock-rundir (its creator's owner mark, rundir_sweep.h);
 * RUN itself is 0700 under a per-user base directory that must be ours
 * and not a link.  Removal never follows links the program may have
 * planted. */
#ifndef AL_CHILD_RUNDIR_H
#define AL_CHILD_RUNDIR_H

#include <stdbool.h>
#include <sys/types.h>

#include <airlock/contract.h>
#include <airlock/error.h>
#include <airlock/provider.h>

typedef struct al_rundir {
	char *root;
	char *code_dir;
	char *workspace;
	char *tmp;
	char *script_path; /* set by al_rundir_write_code */
	/* Holds the lock of RUN/.airlock-rundir while root is set: a sweep
	 * removes only run directories nobody holds (rundir_sweep.h). */
	int owner_fd;
} al_rundir;

/* A run id usable as a file name: [A-Za-z0-9_-], 1 to 39 bytes.  Host
 * paths are made from run ids only, never from request strings. */
bool al_run_id_safe(const char *run_id);

/* base NULL: $AIRLOCK_RUN_BASE, else $TMPDIR or /tmp, + "/airlock-<uid>".
 * The run id must be safe (else EINVAL, "workspace_setup_failed").  The
 * first time in a process (then at most once a minute) it sweeps the
 * base: leftovers of creators that are gone are removed. */
int al_rundir_create(const char *base, const char *run_id, al_rundir *out,
		     al_error **err);
/* The two halves of al_rundir_create: a run directory laid out under a
 * hidden name in base (its owner mark held, so no sweep takes it; made
 * ahead of a run, sandbox/cgroups_ahead.h), and its rename to run_id
 * (never over an existing one).  0 or a negative errno with *err set;
 * a failed claim leaves rd as it was. */
int al_rundir_make(const char *base, al_rundir *out, al_error **err);
int al_rundir_claim(al_rundir *rd, const char *run_id, al_error **err);
int al_rundir_write_code(al_rundir *rd, const char *script_name,
			 const al_bytes *code, al_error **err);
/* Writes the bundle (bundle.h): its code into RUN/code and, when inputs,
 * its input files beneath RUN/workspace, owned by uid/gid unless uid is
 * (uid_t)-1; checks every file read back against the manifest; then
 * makes RUN/code read-only (0555) and sets script_path.  Errors as
 * al_bundle_materialise. */
int al_rundir_materialise(al_rundir *rd, const al_bundle *b,
			  const al_manifest *m, bool inputs, uid_t uid,
			  gid_t gid, al_error **err);
/* An O_PATH directory descriptor of RUN/workspace (not through a link),
 * or -errno. */
int al_rundir_workspace_fd(const al_rundir *rd);
/* "/dev/shm/airlock-<euid>" when /dev/shm is a root-owned sticky tmpfs,
 * else NULL: a per-boot place for run directories that hold only what
 * the host wrote (a sandboxed run's code and inputs), where creating and
 * removing them costs no disk inode allocation.  The string is static. */
const char *al_rundir_tmpfs_base(void);
/* Removes base/run_id (a leftover of a killed provider) when base is not
 * NULL; nothing when it is absent.  0 or -errno. */
int al_rundir_remove_leftover(const char *base, const char *run_id);
/* Removes the tree (without following links) and frees the paths. */
int al_rundir_remove(al_rundir *rd);
/* Moves RUN out of its run id's sight, under a hidden name in the same
 * base (still holding its owner mark, so no sweep takes it), for
 * al_rundir_remove to remove later: the run id can name a new run
 * directory at once.  Afterwards only root is set.  0 or -errno (rd
 * unchanged). */
int al_rundir_set_aside(al_rundir *rd);
/* Removes parent_fd/name and everything beneath it, never following a
 * link and holding a bounded number of descriptors whatever the tree's
 * depth (deep subtrees are moved up and removed in later passes). */
int al_remove_tree_at(int parent_fd, const char *name);

/* Names of trees al_remove_hidden_at is removing: a crash may leave one
 * behind for a later sweep to finish. */
#define AL_GONE_PREFIX ".gone-"
/* Renames parent_fd/name out of sight first (a half-removed tree never
 * answers under its own name), then removes it as al_remove_tree_at
 * does.  0 or -errno. */
int al_remove_hidden_at(int parent_fd, const char *name);
/* The names in dir_fd that keep accepts, every one read before the
 * caller acts on any (removing while reading a directory may skip some):
 * a NULL-terminated vector the caller frees with al_strv_free, NULL when
 * there are none.  0, -ENOMEM, or -errno when dir_fd cannot be read. */
int al_dir_names_at(int dir_fd, bool (*keep)(const char *name),
		    char ***names, size_t *n);

#endif
