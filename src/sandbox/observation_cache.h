/* Internal: the sandbox provider's observations, cached on disk.
 *
 * Probing the sandbox means trials: a forked child tries every mechanism,
 * a test cgroup is created and limited per controller, and each language
 * runs an empty program inside a real sandbox.  Their results cannot
 * change without one of their inputs changing, so they are kept in
 * <cache dir>/sandbox-facts-{m,l}-KEY.json (0600, ours; m the mechanisms
 * and cgroups, l the languages' inside runs), one file per key that hashes
 * every such input: kernel release and build, boot id, our cgroups (the
 * /proc/self/cgroup text, the located hierarchies and their owners and
 * modes, the unified tree's enabled controllers), euid, the provider
 * config, the user-namespace and seccomp sysctls, the Landlock ABI and
 * the identity of the code doing the trials.  The first probe of a boot
 * (or after any of these changed) does the real trials; a later one reads
 * them back.  Inside-run results are kept per toolchain identity under the
 * same key.  A run whose setup fails because a mechanism vanished fails
 * closed and calls al_sb_observations_invalidate, so the next probe observes anew.
 */
#ifndef AL_SANDBOX_OBSERVATION_CACHE_H
#define AL_SANDBOX_OBSERVATION_CACHE_H

#include <stdbool.h>
#include <stdio.h>

#include "cgroup/cgroup.h"

/* What one trial in a forked child could do. */
typedef struct al_sb_mechanisms {
	bool user_namespaces; /* a user namespace could be created */
	bool namespaces;      /* pid, mount, net, ipc, uts, cgroup */
	bool no_new_privs;
	bool seccomp;	      /* the compiled filter loaded */
	bool landlock;	      /* a ruleset could be created and enforced */
	bool caps_dropped;    /* bounding set and capset emptied */
} al_sb_mechanisms;

typedef struct al_sb_observed {
	al_sb_mechanisms mech;
	al_sb_cgverdict cg;
} al_sb_observed;

/* The key's inputs that live in the provider's context. */
typedef struct al_sb_key_input {
	const char *config;	     /* canonical provider config text */
	const al_sb_cgroups *cg;     /* located (not yet tried) */
	int landlock_abi;
	int cap_last;
} al_sb_key_input;

#define AL_SB_KEY_LEN 65

/* Hashes every input the observations depend on into key (hex), and
 * into lang_key those the languages' inside observations depend on (the
 * same less the cgroup inputs: they do not change what an interpreter
 * does).  Each input is read from the system once for both. */
int al_sb_observations_keys(const al_sb_key_input *in,
			    char key[AL_SB_KEY_LEN],
			    char lang_key[AL_SB_KEY_LEN]);
/* A cache key's text while it is written: al_sb_key_begin opens it with
 * the first line and the kernel's identity (release, version, machine),
 * which every cached verdict depends on; al_sb_key_end hashes it. */
typedef struct al_sb_keytext {
	FILE *m;
	char *text;
	size_t len;
} al_sb_keytext;
int al_sb_key_begin(al_sb_keytext *k, const char *first_line);
/* Closes the text and writes its SHA-256 (hex) into key; 0 or -ENOMEM. */
int al_sb_key_end(al_sb_keytext *k, char key[AL_SB_KEY_LEN]);
/* Appends "label=path dev ino size uid:gid mode mtime" (or "label=-") to a
 * cache key's text: the identity of a file the cached verdicts depend on. */
void al_sb_key_put_stat(FILE *m, const char *label, const char *path);

/* true and *obs filled when the cache holds observations for key. */
bool al_sb_observations_load(const char *cache_dir, const char *key,
		    al_sb_observed *obs);
/* Remembers obs for key (best effort: an unwritable cache only costs the
 * trials next time). */
void al_sb_observations_store(const char *cache_dir, const char *key,
		     const al_sb_observed *obs);

/* Inside-run result of one toolchain identity under key: -1 unknown, 1 it
 * ran.  Only success is stored: a failure is tried again. */
int al_sb_observations_inside_get(const char *cache_dir, const char *key,
			 const char *toolchain_id);
void al_sb_observations_inside_put(const char *cache_dir, const char *key,
			  const char *toolchain_id);

/* Forgets everything cached (a run found a mechanism missing). */
void al_sb_observations_invalidate(const char *cache_dir);

#endif
