/* Internal: starting one sandboxed program.
 *
 * clone3 creates the init (pid 1 of new pid, mount, net, ipc and uts
 * namespaces, in the run's v2 cgroup when there is one); the parent puts
 * it in the v1 cgroups (and, unprivileged, writes its uid map) and lets it
 * go; the init builds the filesystem view, brings lo up when asked, enters
 * its cgroup namespace and, when started as root, drops to the run's host
 * uid inside a fresh user namespace.  It then forks the program, which
 * sheds every capability, sets no_new_privs, rlimits, Landlock and the
 * seccomp filter, and execs.  The init runs al_shepherd_loop as pid 1. */
#ifndef AL_SANDBOX_LAUNCH_H
#define AL_SANDBOX_LAUNCH_H

#include <stdbool.h>
#include <sys/types.h>

#include <airlock/contract.h>
#include <airlock/error.h>

#include "child/shepherd.h"
#include "child/supervise.h"
#include "cgroup/cgroup.h"
#include "sandbox/landlock.h"
#include "sandbox/launch_proto.h"
#include "sandbox/mounts.h"
#include "sandbox/seccomp_policy.h"

typedef struct al_sb_launch {
	bool privileged;	/* started as root: the init drops to host_uid */
	uid_t host_uid;		/* the run's uid on the host */
	gid_t host_gid;
	int cap_last;		/* /proc/sys/kernel/cap_last_cap */
	const al_sb_mount_plan *mounts;
	al_network network;
	/* A network namespace made ahead (netns_ahead.h) the init joins
	 * instead of a new one (root launches, network not host), or -1.
	 * The caller closes it after the launch. */
	int netns_fd;
	char *const *argv;	/* argv[0] absolute, as seen inside */
	char *const *envp;
	const char *cwd;
	const al_rlimit_spec *rlimits;
	size_t n_rlimits;
	bool stdin_pipe;
	int stdin_src; /* >= 0: the program's stdin (a live stream) */
	const al_sb_filter *filter;	/* NULL: no seccomp (probe only) */
	al_sb_landlock_spec landlock;
	al_sb_cgrun *cgroups;		/* may have no dirs at all */
	/* a tmpfs /workspace (the mount plan has it) to fill with the
	 * bundle's input items, owned by ws_uid/ws_gid as the init sees
	 * them; read-only afterwards when ws_ro */
	bool ws_fill;
	bool ws_ro;
	const al_bundle_item *ws_items;
	size_t n_ws_items;
	uid_t ws_uid;
	gid_t ws_gid;
	/* With ws_fill: once the init has filled the tmpfs, and before the
	 * program exists, it hands the parent an O_PATH descriptor of it
	 * (over a socket pair) and waits; ws_check (may be NULL) then judges
	 * the files in the parent — nonzero refuses the run with
	 * "bundle_mismatch".  The descriptor goes to *ws_fd_out (closed by
	 * the caller; it keeps the tmpfs readable after the namespace is
	 * gone, for collecting outputs) or is closed when ws_fd_out is NULL. */
	int (*ws_check)(void *ctx, int ws_fd);
	void *ws_check_ctx;
	int *ws_fd_out;
	/* The same hand-over without the filling and the check (a warm
	 * member's empty tmpfs /workspace; the parent writes the inputs
	 * beneath the descriptor when the run comes). */
	bool ws_hand;
	/* The plan has a tmpfs /inbox-acks: its O_PATH descriptor is handed
	 * over with the workspace's, to *acks_fd_out (closed by the
	 * caller), for mirroring the program's markers (warm_inbox.h). */
	int *acks_fd_out;
	/* A warm pool member that execs later (warm.h): the program stops
	 * after the seccomp filter, reports itself ready on the fail pipe
	 * and reads a header from its stdin (AL_SB_GO_* in launch_proto.h)
	 * into pages it maps for it, sets the rlimits it names, puts
	 * /dev/null on fd 0 when it says so, and execs the argv and
	 * environment it carries (argv/envp above are unused).  Started
	 * in its caller's memory, it executes airlock-sandbox-init's waiter
	 * first, which does the same in its own (member_go.h).  The fail
	 * pipe's read end goes to *go_fail_fd: an exec failure after go is
	 * reported there. */
	bool wait_go;
	int *go_fail_fd;
} al_sb_launch;

/* After a member's go: 1 and *reason when the fail pipe reports that the
 * exec failed ("start_failed"), 0 when the exec happened, -errno on
 * error.  Closes nothing. */
int al_sb_go_failed(int fail_fd, const char **reason);

/* Where a start failed, for the error reason. */
const char *al_sb_stage_name(int stage);

/* Makes now what a root caller's starts will need (the memfd of
 * airlock-init, init_image.h) rather than in its first run, so that an
 * idle supervisor lists it among the descriptors its runs must leave as
 * they found them (supervisor/reuse.h).  Nothing where runs start as a
 * copy of their caller (unprivileged, sanitizer builds). */
void al_sb_launch_prepare(bool privileged);

/* Starts the sandbox; on success fills child for al_supervise (signal_tree
 * kills through the cgroup and the pid namespace; signal_ctx must be freed
 * with al_sb_signal_ctx_free after the run).  Returns 0 or a negative
 * errno with err set: reason "sandbox_unavailable" when a mechanism failed,
 * "workspace_no_space" / "workspace_setup_failed" when the input files do
 * not fit in / could not be written to a bounded workspace,
 * "bundle_mismatch" when ws_check refused them, "start_failed" when the
 * program could not be executed. */
int al_sb_launch_start(const al_sb_launch *l, al_child *child,
		       al_error **err);
void al_sb_signal_ctx_free(void *ctx);

#endif
