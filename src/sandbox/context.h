/* Internal: what the sandbox provider learns once per handle (or probe):
 * its configuration and the host's mechanisms. */
#ifndef AL_SANDBOX_CONTEXT_H
#define AL_SANDBOX_CONTEXT_H

#include <stdbool.h>
#include <stdint.h>

#include <airlock/contract.h>
#include <airlock/error.h>

#include "cgroup/cgroup.h"
#include "sandbox/observation_cache.h"
#include "sandbox/seccomp_policy.h"

/* "pool": {"<language>": {"size": N, "network": "none", "workspace":
 * "none", "refill": true, "inbox": false}} (docs/sandbox.md, "Warm
 * pools"). */
#define AL_SB_POOL_MAX_SIZE 16
#define AL_SB_POOL_MAX_LANGS 8
typedef struct al_sb_pool_lang {
	char language[16];
	unsigned size;		     /* 1..AL_SB_POOL_MAX_SIZE */
	al_network network;	     /* the members' class */
	al_workspace_mode workspace;
	bool refill;		     /* make a new member after each run */
	bool inbox;		     /* members serve runs with an inbox only */
} al_sb_pool_lang;

/* Provider config JSON keys (docs/sandbox.md): */
typedef struct al_sb_config {
	uint32_t uid_base;	  /* "uid_base", default 200000 */
	uint32_t uid_count;	  /* "uid_count", default 1000 */
	char *run_dir;		  /* "run_dir", default: al_rundir's base */
	bool allow_host_network;  /* "allow_host_network", default false */
	uint64_t tmp_bytes;	  /* "tmp_bytes", default 64 MiB */
	/* Bounds of the other areas a run can write (docs/sandbox.md,
	 * "Writable areas"): a rw workspace whose request names no
	 * workspace_bytes, /inbox-acks, and the run's socket buffers when
	 * the request names no socket_bytes. */
	uint64_t workspace_bytes; /* "workspace_bytes", default 256 MiB */
	uint64_t inbox_acks_bytes; /* "inbox_acks_bytes", default 1 MiB */
	uint64_t socket_bytes;	  /* "socket_bytes", default 64 MiB */
	/* "pool": languages with a size > 0 only */
	al_sb_pool_lang pool[AL_SB_POOL_MAX_LANGS];
	size_t n_pool;
} al_sb_config;

#define AL_SB_DEFAULT_UID_BASE 200000u
#define AL_SB_DEFAULT_UID_COUNT 1000u
#define AL_SB_DEFAULT_TMP_BYTES (64u * 1024u * 1024u)
#define AL_SB_DEFAULT_WORKSPACE_BYTES (256u * 1024u * 1024u)
#define AL_SB_DEFAULT_INBOX_ACKS_BYTES (1024u * 1024u)
#define AL_SB_DEFAULT_SOCKET_BYTES (64u * 1024u * 1024u)

int al_sb_config_parse(const char *json, al_sb_config *cfg, al_error **err);
void al_sb_config_clear(al_sb_config *cfg);

typedef struct al_sb_context {
	al_sb_config cfg;
	bool privileged; /* euid 0: per-run uids from the pool */
	int cap_last;
	int landlock_abi;
	al_sb_cgroups cg;
	al_sb_filter filter; /* compiled only when runs may start */
	char *cache_dir;
	char key[AL_SB_KEY_LEN]; /* observation_cache key; "" when none */
	char lang_key[AL_SB_KEY_LEN]; /* same, for the languages' entries */
	al_sb_observed obs;	 /* mechanisms and cgroup verdicts */
	bool obs_cached;	 /* obs came from the cache */
} al_sb_context;

enum {
	/* ensure: compile the seccomp filter (runs will start) */
	AL_SB_CTX_RUNS = 1 << 0,
	/* doctor: do every trial now, whatever the cache holds */
	AL_SB_CTX_OBSERVE_NOW = 1 << 1,
};

/* Parses the config, locates the cgroups and takes the observations from
 * the cache or, when it has none for this host's key, does the trials
 * (and caches them). */
int al_sb_context_init(al_sb_context *ctx, const char *config_json,
		       unsigned flags, al_error **err);
/* Compiles the filter when it is not yet (a probe that must run a
 * language inside).  Not thread-safe: for a context of one thread. */
int al_sb_context_need_filter(al_sb_context *ctx, al_error **err);
void al_sb_context_clear(al_sb_context *ctx);

#endif
