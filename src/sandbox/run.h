/* Internal: one step (build or run) of a request inside a fresh sandbox. */
#ifndef AL_SANDBOX_RUN_H
#define AL_SANDBOX_RUN_H

#include <stdbool.h>
#include <sys/types.h>

#include <airlock/provider.h>

#include "child/rundir.h"
#include "child/shepherd.h"
#include "child/supervise.h"
#include "cgroup/cgroup.h"
#include "sandbox/context.h"

typedef struct al_sb_step {
	const al_sb_context *ctx;
	uid_t uid; /* the run's host uid (and gid) */
	const al_rundir *rd;
	char *const *extra_roots;
	char *const *argv;
	char *const *envp;
	const al_exec *exec;
	bool with_stdin;
	bool build;	     /* /build writable (TypeScript transpile) */
	bool has_build_dir;  /* mount RUN/tmp at /build */
	const char *cg_name; /* unique cgroup name for this step */
	/* The step's limits; NULL: the request's (a build step has its
	 * own, a judged case may too). */
	const al_limits *limits;
	/* The bundle: a bounded workspace is filled with its inputs by the
	 * init and checked against the manifest before the program starts.
	 * NULL: no input files. */
	const al_bundle *bundle;
	const al_manifest *manifest;
	/* The step's output as it arrives (NULL: not wanted). */
	al_output_fn on_output;
	void *on_output_ctx;
	/* Bounded workspace only: receives an O_PATH descriptor of its
	 * tmpfs (the caller closes it), which stays readable after the
	 * sandbox is gone; untouched otherwise.  NULL: not wanted. */
	int *ws_fd;
	/* The provider handle's network namespace made ahead (NULL: the
	 * launch makes its own). */
	struct al_sb_netns_ahead *netns_ahead;
	/* The handle's cgroups made ahead, and where the step's go back to
	 * be removed (NULL: the step makes and removes its own). */
	struct al_sb_cg_ahead *cg_ahead;
	/* The run's uid lock (NULL: none).  The program's step, with
	 * cg_ahead, ends on its init's report; the lock then goes with the
	 * set, given back once the helper has reaped the exiting init. */
	struct al_sb_uid *uid_slot;
} al_sb_step;

/* The size of the tmpfs that is the run's /workspace (nothing of it on
 * the host; a cold run's init fills it with the input files), or 0 when
 * /workspace is a read-only bind of RUN/workspace (grant ro without
 * workspace_bytes) or an empty directory (grant none): the request's
 * workspace_bytes, else for grant rw the config's default. */
uint64_t al_sb_workspace_bytes(const al_sb_config *cfg,
			       const al_request *req);

/* Fills res with the step's outcome (unavailable when the sandbox could
 * not be set up).  Returns 0, or a negative errno for a provider bug or a
 * cgroup that could not be removed (res still holds the outcome). */
int al_sb_run_step(const al_sb_step *s, al_result *res, al_error **err);

/* The bound of the run's socket buffers: the request's socket_bytes,
 * else the config's default (al_sb_cgrun_limit_sockets). */
uint64_t al_sb_socket_bytes(const al_sb_config *cfg, const al_limits *l);

/* true when the step's program gets the request's stdin through a pipe
 * (else /dev/null). */
bool al_sb_step_stdin(const al_sb_step *s);

/* The started program until it ends: supervision (deadline, output,
 * cancel), the cgroups emptied, usage (minus base, when not NULL) and the
 * limit a kill came from.  fwd (NULL: none): the run's inbox forwarder,
 * begun once the program has run a tick.  The caller removes the
 * cgroups.  init_pidfd NULL: the init is reaped before this returns.
 * Else the step ends on the init's report (al_supervise_opts
 * end_at_report) and *init_pidfd gets the pidfd of an init still
 * exiting, for the caller to reap (al_child_reap) before it removes the
 * cgroups, or -1 when it was reaped here. */
struct al_sb_inbox_fwd;
int al_sb_step_supervise(const al_sb_step *s, al_child *child,
			 al_sb_cgrun *cg, const al_sb_cgusage *base,
			 struct al_sb_inbox_fwd *fwd, int *init_pidfd,
			 al_result *res, al_error **err);

#endif
