/* Internal: the compiled seccomp filter, cached on disk.
 *
 * Compiling the policy with libseccomp costs about half a millisecond, paid
 * by every process that ensures a sandbox (each CLI run).  The BPF it
 * produces depends only on the policy table (hashed row by row into the
 * key, as well as this code's file), libseccomp (its version, API level
 * and file) and the kernel, so it is kept in
 * <cache dir>/seccomp-<key>.bpf under a key hashing all of those.  A file
 * is used only when it is ours (owner, mode), its header names exactly
 * this key and its instructions match the SHA-256 stored beside them;
 * anything else -- a mismatch, a short or oversized file, a bad digest --
 * is ignored and the policy compiled anew (fail closed: never a filter
 * that was not verified). */
#ifndef AL_SANDBOX_FILTER_CACHE_H
#define AL_SANDBOX_FILTER_CACHE_H

#include <stdbool.h>

#include "sandbox/seccomp_policy.h"

#define AL_SB_FILTER_KEY_LEN 65

/* The key for the filter compiled by this code on this host. */
int al_sb_filter_key(char key[AL_SB_FILTER_KEY_LEN]);

/* 0 and *out filled (caller frees with al_sb_filter_clear) when dir holds
 * a verified filter for key; -ENOENT otherwise. */
int al_sb_filter_cache_load(const char *dir, const char *key,
			    al_sb_filter *out);

/* Stores f under key (best effort: a failure only costs a compile). */
void al_sb_filter_cache_store(const char *dir, const char *key,
			      const al_sb_filter *f);

#endif
