/* Internal: the sandbox's seccomp policy, compiled once into a BPF program
 * that each run loads with one prctl (no libseccomp work per run; no
 * libseccomp work per process either once the BPF is cached on disk). */
#ifndef AL_SANDBOX_SECCOMP_POLICY_H
#define AL_SANDBOX_SECCOMP_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/filter.h>

#include <airlock/error.h>

typedef struct al_sb_filter {
	struct sock_filter *insns;
	unsigned short len;
} al_sb_filter;

/* The policy table compiled for the native architecture: the process's
 * copy, else a verified one from the cache dir (filter_cache.h), else
 * compiled now (and stored).  The caller owns *out. */
int al_sb_filter_compile(al_sb_filter *out, al_error **err);
/* Compiles the policy now with libseccomp (no cache). */
int al_sb_filter_compile_now(al_sb_filter *out, al_error **err);
/* Forgets the process's copy (tests). */
void al_sb_filter_reset(void);
void al_sb_filter_clear(al_sb_filter *f);
/* Loads the filter into the calling thread (no_new_privs must be set).
 * Async-signal-safe: used in the child between clone and exec. */
int al_sb_filter_load(const al_sb_filter *f);

/* One row of the policy, for documentation output (the container provider's seccomp profile). */
typedef struct al_sb_rule_info {
	const char *syscall;
	const char *action; /* "EPERM", "ENOSYS", "EAFNOSUPPORT" */
	const char *when;   /* human condition, "always" */
} al_sb_rule_info;

/* The policy table as data; n set to its length. */
const al_sb_rule_info *al_sb_policy_rules(size_t *n);
/* Writes the policy table, every field of every row, to m: part of the
 * compiled filter's cache key (filter_cache.h). */
void al_sb_policy_describe(FILE *m);

#endif
