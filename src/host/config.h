/* Internal: the parsed configuration (docs/configuration.md). */
#ifndef AL_HOST_CONFIG_H
#define AL_HOST_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <airlock/contract.h>
#include <airlock/host.h>

/* A grant a tenant (or a content pin) holds: the modes it may ask for. */
typedef struct al_cfg_grant {
	unsigned network;   /* bit (1u << al_network) per allowed mode */
	unsigned workspace; /* bit (1u << al_workspace_mode) per mode */
	char **secrets;	    /* names */
	size_t n_secrets;
	bool streaming;
	/* the toolbelt, and the host operations (names) a request may ask
	 * for (docs/toolbelt.md) */
	bool toolbelt;
	char **operations;
	size_t n_operations;
} al_cfg_grant;

/* A grant pinned to one execution plan (host/plan.h): either the plan's
 * SHA-256, or a code pin — a language and the code's SHA-256, which names
 * the plan of that code alone (no argv, env, stdin, files, toolchain). */
typedef enum al_pin_kind { AL_PIN_PLAN = 0, AL_PIN_CODE } al_pin_kind;

typedef struct al_cfg_pin {
	al_pin_kind kind;
	char sha256[65]; /* lower-case hex: the plan's, or the code's */
	char *language;	 /* AL_PIN_CODE only */
	al_cfg_grant grant;
} al_cfg_pin;

typedef struct al_cfg_tenant {
	char *name;
	bool all_languages;
	char **languages;
	size_t n_languages;
	/* container images a request may name (docs/containers.md) */
	char **images;
	size_t n_images;
	al_cfg_grant grant;
	al_cfg_pin *pins;
	size_t n_pins;
	/* Every limit has a ceiling: the configured one, else the built-in
	 * default (AL_CFG_CEIL_*); .set marks those that have one. */
	al_limits ceilings;
	unsigned ceilings_configured; /* AL_LIMIT_* bits the file named */
	uint64_t argv_bytes_max;      /* ceilings.argv_bytes */
	uint64_t env_bytes_max;	      /* ceilings.env_bytes */
	/* Variables of the env policy (host/env_policy.h) this tenant's
	 * requests may set. */
	char **env_allow;
	size_t n_env_allow;
	unsigned concurrency; /* 0: only the global quota applies */
	/* airlockd: may a caller's host forward the environment it resolved
	 * (X-Airlock-Forwarded-Env, docs/api.md)? */
	bool accept_forwarded_env;
	/* The host operations this tenant's runs may be granted (compact
	 * JSON object text, host/operations.h), or NULL. */
	char *operations_json;
	/* "pass_env": the daemon's own variables its runs receive
	 * (host/config_env.h); "secret_env": secret -> variable. */
	char **pass_env;
	size_t n_pass_env;
	struct al_cfg_secret_env {
		char *secret;
		char *var;
	} *secret_env;
	size_t n_secret_env;
	/* airlockd: "request_rate", at most rate_requests requests every
	 * rate_per_s seconds (0: no bound). */
	unsigned rate_requests, rate_per_s;
} al_cfg_tenant;

typedef struct al_cfg_candidate {
	char *provider;
	char *config_json; /* compact JSON object text, or NULL */
	/* "module": the absolute path of the shared object that provides
	 * it (providers/module.c), or NULL for a built-in or registered one */
	char *module;
} al_cfg_candidate;

typedef enum al_secrets_kind {
	AL_SECRETS_NONE = 0,
	AL_SECRETS_DIR,
	AL_SECRETS_FILE
} al_secrets_kind;

/* How run.finished and run.denied are committed (docs/configuration.md,
 * "audit"). */
typedef enum al_audit_sync {
	AL_AUDIT_SYNC_AUTO = 0,
	AL_AUDIT_SYNC_FULL,
	AL_AUDIT_SYNC_NORMAL,
} al_audit_sync;

struct al_config {
	char *source; /* the JSON text it was parsed from (for copies) */
	bool execution_enabled;
	bool trusted_acknowledged;
	/* "acknowledged_providers": providers the deployment takes on their
	 * word (every one but airlock's own sandbox needs it, docs/host.md). */
	char **acknowledged;
	size_t n_acknowledged;
	al_cfg_candidate *candidates;
	size_t n_candidates;
	/* "require_provider": the provider the deployment requires to be
	 * the one that resolves; the host refuses to start otherwise
	 * (host/select.c), or NULL */
	char *require_provider;
	al_cfg_tenant *tenants;
	size_t n_tenants;
	unsigned concurrency;
	uint64_t slot_wait_ms;
	char *state_dir; /* NULL: the caller supplies one */
	uint64_t idempotency_retention_s;
	/* synchronous for run.finished/denied: "full", "normal", or "auto"
	 * (FULL unless the run's result is already durable elsewhere) */
	al_audit_sync audit_finished_sync;
	uint64_t audit_busy_timeout_ms;
	al_secrets_kind secrets_kind;
	char *secrets_path;
	uint64_t grace_ms;
	/* "retention": seconds a finished run's artifacts are kept
	 * (docs/workspaces.md) */
	uint64_t retention_s;
	/* "idle_supervisors": the daemon's pre-started generic supervisors
	 * (docs/durability.md, "Idle supervisors"); not used by the CLI. */
	unsigned idle_supervisors;
	/* "spare_run_dirs": run directories airlockd makes ahead
	 * (docs/durability.md, "Run directories made ahead"); read at the
	 * daemon's start only. */
	unsigned spare_run_dirs;
	/* "build_cache": {"bytes": N, "shared": bool} (docs/languages.md):
	 * bytes 0 turns the cache off; not shared: one cache per tenant. */
	uint64_t build_cache_bytes;
	bool build_cache_shared;
};

/* Defaults of the keys a file leaves out. */
#define AL_CFG_DEFAULT_CONCURRENCY 8u
#define AL_CFG_DEFAULT_SLOT_WAIT_MS 30000u
#define AL_CFG_DEFAULT_RETENTION_S (7u * 24u * 3600u)
#define AL_CFG_DEFAULT_GRACE_MS 5000u
#define AL_CFG_DEFAULT_IDLE_SUPERVISORS 2u
#define AL_CFG_MAX_IDLE_SUPERVISORS 64u
#define AL_CFG_DEFAULT_SPARE_RUN_DIRS 4u
#define AL_CFG_MAX_SPARE_RUN_DIRS 64u
#define AL_CFG_DEFAULT_RUN_RETENTION_S (7u * 24u * 3600u)
#define AL_CFG_MAX_RUN_RETENTION_S (10u * 366u * 24u * 3600u)
#define AL_CFG_DEFAULT_BUSY_TIMEOUT_MS 5000u

/* Built-in ceilings of a tenant whose configuration names none for that
 * limit (docs/configuration.md).  workspace_bytes has none: a bounded
 * workspace changes how the sandbox mounts it. */
#define AL_CFG_CEIL_WALL_MS (15u * 60u * 1000u)
#define AL_CFG_CEIL_CPU_MS (15u * 60u * 1000u)
#define AL_CFG_CEIL_MEMORY_BYTES (2ull << 30)
#define AL_CFG_CEIL_PIDS 1024u
#define AL_CFG_CEIL_OUTPUT_BYTES (16u << 20)
#define AL_CFG_CEIL_FILE_BYTES (1ull << 30)
#define AL_CFG_CEIL_OPEN_FILES 4096u
#define AL_CFG_CEIL_ARGV_BYTES (256u << 10)
#define AL_CFG_CEIL_ENV_BYTES (256u << 10)
/* What a memory or pids limit the request leaves unset becomes under a
 * built-in ceiling (the contract's default is "none"). */
#define AL_CFG_UNSET_MEMORY_BYTES (512u << 20)
#define AL_CFG_UNSET_PIDS 256u

const al_cfg_tenant *al_config_tenant(const al_config *cfg, const char *name);
bool al_cfg_tenant_allows_language(const al_cfg_tenant *t, const char *lang);
/* Pointer to the field of `l` named by one AL_LIMIT_* bit, or NULL. */
uint64_t *al_limits_field(al_limits *l, unsigned bit);
bool al_cfg_tenant_allows_env(const al_cfg_tenant *t, const char *name);
bool al_cfg_acknowledged(const al_config *cfg, const char *provider);
/* Deep copy through the source text. */
int al_config_copy(const al_config *cfg, al_config **out, al_error **err);

#endif
