/* Internal: the sandbox's filesystem view.
 *
 * The parent builds a plan (a flat list of operations with every string
 * precomputed); the child executes it between clone and exec without
 * allocating: fresh tmpfs root, read-only nosuid/nodev binds of the system
 * dirs and the toolchain's roots, generated /etc, bounded /tmp, /code,
 * /workspace, new /proc with host-revealing files masked, minimal /dev,
 * pivot_root with the old root detached. */
#ifndef AL_SANDBOX_MOUNTS_H
#define AL_SANDBOX_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <airlock/contract.h>
#include <airlock/error.h>
#include <airlock/provider.h>

typedef enum al_sb_mop {
	AL_MOP_MKDIR,	/* dst (with parents) */
	AL_MOP_SYMLINK, /* dst -> src */
	AL_MOP_BIND,	/* host src onto dst; ro unless rw; dev keeps nodes */
	AL_MOP_TMPFS,	/* dst with options src */
	AL_MOP_FILE,	/* dst with content src, mode 0444 */
	AL_MOP_PROC,	/* new proc at dst */
	AL_MOP_MASK,	/* /dev/null over dst when it exists */
	AL_MOP_RDONLY,	/* dst bound onto itself read-only, when it exists */
	/* host dir src read-only at dst as an overlay whose lower layer it
	 * is: the mount table shows "/" and "lowerdir=.", not the host's
	 * path; a bind where overlay is refused.  Only for a dir the host
	 * no longer changes (overlay does not promise to see changes). */
	AL_MOP_VIEW,
} al_sb_mop;

typedef struct al_sb_mount_op {
	al_sb_mop op;
	char *src;
	char *dst;
	bool rw;
	bool dev;
	bool optional; /* a missing source is skipped */
} al_sb_mount_op;

typedef struct al_sb_mount_plan {
	al_sb_mount_op *ops;
	size_t n, cap;
} al_sb_mount_plan;

typedef struct al_sb_mount_params {
	const char *code_dir;	   /* host RUN/code */
	const char *workspace_dir; /* host RUN/workspace, NULL for none */
	al_workspace_mode workspace;
	/* > 0 (with workspace ro or rw): /workspace is a tmpfs of this size
	 * owned by ws_uid/ws_gid (as the mounting namespace sees them),
	 * filled by al_sb_workspace_fill, not a bind of workspace_dir */
	uint64_t workspace_bytes;
	uid_t ws_uid;
	gid_t ws_gid;
	al_network network;
	uint64_t tmp_bytes;
	char *const *extra_roots; /* toolchain roots, NULL-terminated or NULL */
	/* The host still writes into code_dir and workspace_dir after the
	 * sandbox starts (a warm member): binds, not AL_MOP_VIEW. */
	bool live;
	const char *build_dir;	  /* host RUN/tmp mounted at /build, or NULL */
	bool build_rw;		  /* the build step writes /build */
	/* A durable run's inbox: events read-only at /inbox (NULL: no
	 * inbox), the program's acknowledgements at /inbox-acks, a tmpfs of
	 * inbox_acks_bytes owned by ws_uid/ws_gid with room for one marker
	 * per event (nothing of it on the host: the parent reads it through
	 * the descriptor the init hands over, launch.h). */
	const char *inbox_dir;
	uint64_t inbox_acks_bytes;
	/* The toolbelt (docs/toolbelt.md): the run's socket and token
	 * directory at /toolbelt and airlock-tool's at /toolbelt-bin, both
	 * read-only binds (NULL: neither). */
	const char *tool_dir;
	const char *tool_bin_dir;
} al_sb_mount_params;

int al_sb_mount_plan_build(const al_sb_mount_params *prm,
			   al_sb_mount_plan *p, al_error **err);
void al_sb_mount_plan_clear(al_sb_mount_plan *plan);

/* The directory the sandbox replaces (its own /tmp, /dev, /proc, /code,
 * /workspace, ...) that path lies beneath, or NULL: a toolchain there
 * would be hidden inside. */
const char *al_sb_path_hidden(const char *path);
/* The host directories bound read-only at the same paths in every run
 * (/usr, /bin, ...): the sandbox's read-only root, where an exec
 * request's program must live (child/exec_shape.h). */
const char *const *al_sb_system_dirs(size_t *n);

/* In the child (new mount namespace, privileged there): builds the tree on
 * a tmpfs mounted at `staging`, pivots into it and detaches the old root.
 * Returns 0, or a negative errno with *failed_op set to the op index (-1
 * for the pivot itself).  Async-signal-safe. */
int al_sb_mounts_apply(const al_sb_mount_plan *plan, const char *staging,
		       int *failed_op);

/* In the child, after al_sb_mounts_apply, for a tmpfs /workspace: writes
 * the bundle's input items (parents created 0755; the code item is
 * skipped), owned by uid/gid, with their exact modes; then makes
 * /workspace read-only when ro.  Returns 0 or a negative errno (-ENOSPC:
 * the inputs do not fit).  Async-signal-safe. */
int al_sb_workspace_fill(const al_bundle_item *items, size_t n, uid_t uid,
			 gid_t gid, bool ro);

/* The /inbox-acks tmpfs's options: a size, one inode per event the
 * inbox can hold (and its root), mode 0700, owned by uid/gid. */
void al_sb_acks_tmpfs_opts(char *buf, size_t len, uint64_t bytes, uid_t uid,
			   gid_t gid);

/* tmpfs options with a size and an inode cap proportional to it (so a
 * tree of empty files cannot pin unbounded kernel memory). */
void al_sb_tmpfs_opts(char *buf, size_t len, const char *mode,
		      uint64_t bytes);

#endif
