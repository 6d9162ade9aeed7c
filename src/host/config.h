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
} al_cfg_grant;

typedef struct al_cfg_pin {
	char code_sha256[65]; /* lower-case hex */
	al_cfg_grant grant;
} al_cfg_pin;

typedef struct al_cfg_tenant {
	char *name;
	bool all_languages;
	char **languages;
	size_t n_languages;
	al_cfg_grant grant;
	al_cfg_pin *pins;
	size_t n_pins;
	al_limits ceilings; /* .set: the limits that have a ceiling */
	unsigned concurrency; /* 0: only the global quota applies */
	/* airlockd: may a caller's host forward the environment it resolved
	 * (X-Airlock-Forwarded-Env, docs/api.md)? */
	bool accept_forwarded_env;
} al_cfg_tenant;

typedef struct al_cfg_candidate {
	char *provider;
	char *config_json; /* compact JSON object text, or NULL */
} al_cfg_candidate;

typedef enum al_secrets_kind {
	AL_SECRETS_NONE = 0,
	AL_SECRETS_DIR,
	AL_SECRETS_FILE
} al_secrets_kind;

struct al_config {
	char *source; /* the JSON text it was parsed from (for copies) */
	bool execution_enabled;
	bool trusted_acknowledged;
	al_cfg_candidate *candidates;
	size_t n_candidates;
	al_cfg_tenant *tenants;
	size_t n_tenants;
	unsigned concurrency;
	uint64_t slot_wait_ms;
	char *state_dir; /* NULL: the caller supplies one */
	uint64_t idempotency_retention_s;
	bool audit_finished_full; /* synchronous=FULL for run.finished/denied */
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
};

/* Defaults of the keys a file leaves out. */
#define AL_CFG_DEFAULT_CONCURRENCY 8u
#define AL_CFG_DEFAULT_SLOT_WAIT_MS 30000u
#define AL_CFG_DEFAULT_RETENTION_S (7u * 24u * 3600u)
#define AL_CFG_DEFAULT_GRACE_MS 5000u
#define AL_CFG_DEFAULT_IDLE_SUPERVISORS 2u
#define AL_CFG_MAX_IDLE_SUPERVISORS 64u
#define AL_CFG_DEFAULT_RUN_RETENTION_S (7u * 24u * 3600u)
#define AL_CFG_MAX_RUN_RETENTION_S (10u * 366u * 24u * 3600u)
#define AL_CFG_DEFAULT_BUSY_TIMEOUT_MS 5000u

const al_cfg_tenant *al_config_tenant(const al_config *cfg, const char *name);
bool al_cfg_tenant_allows_language(const al_cfg_tenant *t, const char *lang);
/* Pointer to the field of `l` named by one AL_LIMIT_* bit, or NULL. */
uint64_t *al_limits_field(al_limits *l, unsigned bit);
/* Deep copy through the source text. */
int al_config_copy(const al_config *cfg, al_config **out, al_error **err);

#endif
