/* Internal: one warm pool member — a sandbox made ahead of demand, its
 * interpreter started and blocked reading its program, used for exactly
 * one run and then destroyed.  See docs/sandbox.md, "Warm pools".
 *
 * A member is everything a cold run does up to the program's start (uid,
 * run directory, cgroups, clone3 into the namespaces, mounts, pivot_root,
 * user namespace, capabilities dropped, no_new_privs, Landlock, seccomp,
 * exec) for one class: language, network mode and workspace grant (and,
 * for javascript, the rlimits).  What
 * only the request knows is applied at "go": its limits (cgroup values
 * rewritten by the host, rlimits by the loader), its code and input files (written
 * by the host into RUN/code, which the member already has bound at /code,
 * and into its /workspace: RUN/workspace bound read-only for grant ro, a
 * tmpfs of its own beneath ws_fd for rw), and then argv, environment and the
 * stdin mode, sent as a header on the program's stdin, which the loader
 * reads before the program exists. */
#ifndef AL_SANDBOX_WARM_H
#define AL_SANDBOX_WARM_H

#include <stdbool.h>
#include <sys/types.h>

#include <airlock/contract.h>
#include <airlock/error.h>
#include <airlock/provider.h>

#include "child/rundir.h"
#include "child/supervise.h"
#include "cgroup/cgroup.h"
#include "sandbox/context.h"
#include "sandbox/run.h"
#include "sandbox/userns.h"

/* What a member can serve; anything else goes cold. */
typedef struct al_sb_warm_class {
	char language[16];
	al_network network;
	al_workspace_mode workspace;
	const char *tc_path; /* the interpreter it started */
	bool inbox; /* serves runs with an inbox (and only those) */
	/* javascript: node cannot set its own rlimits, so a member starts
	 * with those of `rlimits` (al_child_rlimits) and serves only runs
	 * whose rlimits are the same */
	bool fixed_rlimits;
	al_limits rlimits;
} al_sb_warm_class;

typedef struct al_sb_member {
	al_sb_warm_class cls;
	char *tc_path;
	al_sb_uid slot; /* moved to the run at go */
	al_rundir rd;	/* moved to the run at go */
	al_sb_cgrun cg;
	al_child child;
	al_sb_cgusage base; /* cgroup usage when handed its request */
	bool interp;	    /* python, javascript: the interpreter runs a
			     * loader; else the program waits before its
			     * execve */
	int fail_fd;	    /* exec kind: reports an exec failure after go */
	/* inbox class: the member's own RUN/inbox, bound at /inbox
	 * (removed with rd), and its /inbox-acks tmpfs (warm_inbox.h) */
	char *inbox_dir;
	int acks_fd;
	/* workspace rw: its /workspace is a tmpfs of the config's
	 * workspace_bytes, empty until the host writes the run's input files
	 * beneath this descriptor; -1 otherwise.  Moved to the run at go. */
	int ws_fd;
} al_sb_member;

/* true when the language has a warm start: python's and node's
 * (javascript) interpreter started with a loader, or (sh, bash, ruby,
 * powershell: languages without a build step) the program prepared up to
 * its execve. */
bool al_sb_warm_supported(const char *language);

/* true when a member of the language starts with its run's rlimits
 * (javascript), which then belong to its class. */
bool al_sb_warm_fixed_rlimits(const char *language);
/* The start limits of such a member before its pool has seen a run. */
void al_sb_warm_default_limits(al_limits *out);
/* true when a and b give the same rlimits (al_child_rlimits). */
bool al_sb_warm_same_rlimits(const al_limits *a, const al_limits *b);

/* NULL when a member of class c can serve exec exactly as a cold run
 * would, else the reason it cannot (a short word, for tests and logs). */
const char *al_sb_warm_mismatch(const al_sb_warm_class *c,
				const al_exec *exec, const char *tc_path);

/* Prepares a member; run_id names its run directory, cg_name its
 * cgroups; inbox: a member of an inbox class; start_limits: the rlimits
 * a javascript member starts with (NULL: al_sb_warm_default_limits;
 * other languages ignore it).  0, or a negative errno with err set
 * (nothing left). */
int al_sb_member_prepare(const al_sb_context *ctx, const char *language,
			 al_network network, al_workspace_mode workspace,
			 bool inbox, const al_limits *start_limits,
			 const char *run_id, const char *cg_name,
			 al_sb_member **out, al_error **err);

/* The request's cgroup limits into the member, before anything of the
 * request is written (its rlimits go with the header: the loader sets
 * them, RLIMIT_CPU with the CPU its start used added).  0, or a negative errno: the member cannot take them (then
 * destroy it and run cold). */
int al_sb_member_claim(const al_sb_context *ctx, al_sb_member *m,
		       const al_limits *limits);

/* Go: the header (argv, env, stdin mode) to the loader, then the run
 * supervised as a cold one (al_sb_step_supervise).  s->argv is the cold
 * run's argv and script its script path.  Returns 1 when the member was
 * found dead before the program was told to start (nothing of the
 * request ran: run it cold), else as al_sb_run_step.  The member's
 * cgroups are removed either way.  An inbox member forwards the run's
 * inbox while the program lives; every acknowledgement is in
 * exec->inbox_acks_dir when this returns. */
int al_sb_member_run(const al_sb_context *ctx, al_sb_member *m,
		     const al_sb_step *s, const char *script, al_result *res,
		     al_error **err);

/* Kills an unused member and removes everything of it (processes,
 * cgroups, run directory, uid).  NULL is fine.  0 or -EBUSY when a cgroup
 * or the directory could not be removed. */
int al_sb_member_destroy(al_sb_member *m);

#endif
