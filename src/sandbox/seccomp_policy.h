/* Internal: the sandbox's seccomp policy, compiled once into a BPF program
 * that each run loads with one prctl (no libseccomp work per run). */
#ifndef AL_SANDBOX_SECCOMP_POLICY_H
#define AL_SANDBOX_SECCOMP_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/filter.h>

#include <airlock/error.h>

typedef struct al_sb_filter {
	struct sock_filter *insns;
	unsigned short len;
} al_sb_filter;

/* Compiles the policy table for the native architecture. */
int al_sb_filter_compile(al_sb_filter *out, al_error **err);
void al_sb_filter_clear(al_sb_filter *f);
/* Loads the filter into the calling thread (no_new_privs must be set).
 * Async-signal-safe: used in the child between clone and exec. */
int al_sb_filter_load(const al_sb_filter *f);

/* One row of the policy, for documentation output (doctor, tests). */
typedef struct al_sb_rule_info {
	const char *syscall;
	const char *action; /* "EPERM", "ENOSYS", "EAFNOSUPPORT" */
	const char *when;   /* human condition, "always" */
} al_sb_rule_info;

/* The policy table as data; n set to its length. */
const al_sb_rule_info *al_sb_policy_rules(size_t *n);

#endif
