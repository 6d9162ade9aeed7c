/* Internal: the sandbox provider's observed facts. */
#ifndef AL_SANDBOX_PROBE_H
#define AL_SANDBOX_PROBE_H

#include <stdbool.h>

#include <airlock/contract.h>
#include <airlock/error.h>

#include "sandbox/context.h"

/* What one cheap trial in a forked child could do. */
typedef struct al_sb_mechanisms {
	bool user_namespaces; /* a user namespace could be created */
	bool namespaces;      /* pid, mount, net, ipc, uts, cgroup */
	bool no_new_privs;
	bool seccomp;	      /* the compiled filter loaded */
	bool landlock;	      /* a ruleset could be created and enforced */
	bool caps_dropped;    /* bounding set and capset emptied */
} al_sb_mechanisms;

void al_sb_probe_mechanisms(const al_sb_context *ctx, al_sb_mechanisms *m);

/* Observes everything now: mechanisms, cgroups (from ctx's discovery),
 * and every language's toolchain as seen inside a sandbox (cached by the
 * host toolchain's identity). */
int al_sb_probe_facts(const al_sb_context *ctx, al_facts **out,
		      al_error **err);

#endif
