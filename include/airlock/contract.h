/* airlock — the contract: request, limits, grant, result, facts.
 *
 * These are plain value types (the contract is data); the things that act —
 * hosts, provider handles, cancel tokens — are opaque handles declared in
 * provider.h and host.h.  Every pointer inside a request, result or facts is
 * owned by it and released by its _free function.  Byte buffers (al_bytes)
 * may hold NULs and need not be UTF-8.
 */
#ifndef AIRLOCK_CONTRACT_H
#define AIRLOCK_CONTRACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct al_bytes {
	unsigned char *data; /* NUL-terminated for convenience, len excludes it */
	size_t len;
} al_bytes;

/* ---- outcomes ------------------------------------------------------- */

typedef enum al_outcome {
	AL_OUTCOME_COMPLETED = 0,
	AL_OUTCOME_FAILED,
	AL_OUTCOME_KILLED,
	AL_OUTCOME_TIMED_OUT,
	AL_OUTCOME_INTERRUPTED,
	AL_OUTCOME_CANCELLED,
	AL_OUTCOME_INVALID_REQUEST,
	AL_OUTCOME_DENIED,
	AL_OUTCOME_UNSUPPORTED_LANGUAGE,
	AL_OUTCOME_UNENFORCEABLE_LIMIT,
	AL_OUTCOME_DISABLED,
	AL_OUTCOME_UNAVAILABLE,
	AL_OUTCOME_CONFLICT,
	AL_OUTCOME__COUNT
} al_outcome;

/* "completed", "timed_out", ...; NULL for an out-of-range value. */
const char *al_outcome_name(al_outcome outcome);
/* 0 and *out set, or -EINVAL for an unknown name. */
int al_outcome_from_name(const char *name, al_outcome *out);
/* true for the outcomes where a process existed (cancelled counts as ran). */
bool al_outcome_ran(al_outcome outcome);

/* ---- limits --------------------------------------------------------- */

typedef enum al_limit_bit {
	AL_LIMIT_WALL_MS = 1u << 0,
	AL_LIMIT_CPU_MS = 1u << 1,
	AL_LIMIT_MEMORY_BYTES = 1u << 2,
	AL_LIMIT_PIDS = 1u << 3,
	AL_LIMIT_OUTPUT_BYTES = 1u << 4,
	AL_LIMIT_FILE_BYTES = 1u << 5,
	AL_LIMIT_WORKSPACE_BYTES = 1u << 6,
	AL_LIMIT_OPEN_FILES = 1u << 7,
	AL_LIMIT_SOCKET_BYTES = 1u << 8,
	AL_LIMIT_STACK_BYTES = 1u << 9,
	AL_LIMIT__ALL = (1u << 10) - 1
} al_limit_bit;

/* JSON name of one limit bit ("wall_ms", ...); NULL if not a single bit. */
const char *al_limit_name(unsigned bit);
int al_limit_from_name(const char *name, unsigned *bit);

typedef struct al_limits {
	uint64_t wall_ms;
	uint64_t cpu_ms;
	uint64_t memory_bytes;
	uint64_t pids;
	uint64_t output_bytes; /* bytes kept per stream */
	uint64_t file_bytes;
	uint64_t workspace_bytes;
	uint64_t open_files;
	uint64_t socket_bytes; /* socket buffer memory of the whole run */
	uint64_t stack_bytes;  /* each process's stack (RLIMIT_STACK) */
	unsigned set; /* AL_LIMIT_* bits the request asked for explicitly */
} al_limits;

/* Defaults used for limits a request leaves unset (documented in
 * docs/contract.md).  A value of 0 means "no limit of this kind" and is
 * only ever the default for cpu_ms, memory_bytes, pids, file_bytes, stack_bytes,
 * workspace_bytes and socket_bytes. */
#define AL_DEFAULT_WALL_MS 10000u
#define AL_DEFAULT_OUTPUT_BYTES (1024u * 1024u)
#define AL_DEFAULT_OPEN_FILES 256u
#define AL_DEFAULT_GRACE_MS 500u /* TERM -> KILL */

/* Fills every limit not in l->set with its default. */
void al_limits_apply_defaults(al_limits *l);

/* The build step of a compiled language has limits of its own
 * (request "limits.build": these five); its other limits are the run's.
 * Defaults, documented in docs/contract.md: */
#define AL_DEFAULT_BUILD_WALL_MS 60000u
#define AL_DEFAULT_BUILD_CPU_MS 60000u
#define AL_DEFAULT_BUILD_MEMORY_BYTES (1024u * 1024u * 1024u)
#define AL_DEFAULT_BUILD_PIDS 256u
#define AL_DEFAULT_BUILD_OUTPUT_BYTES (64u * 1024u)
#define AL_BUILD_LIMIT_BITS                                                   \
	(AL_LIMIT_WALL_MS | AL_LIMIT_CPU_MS | AL_LIMIT_MEMORY_BYTES |         \
	 AL_LIMIT_PIDS | AL_LIMIT_OUTPUT_BYTES)
/* Fills the five build limits not in l->set with their defaults. */
void al_build_limits_apply_defaults(al_limits *l);

/* ---- grant ---------------------------------------------------------- */

typedef enum al_network {
	AL_NETWORK_NONE = 0,
	AL_NETWORK_LOOPBACK,
	AL_NETWORK_HOST
} al_network;

typedef enum al_workspace_mode {
	AL_WORKSPACE_NONE = 0,
	AL_WORKSPACE_RO,
	AL_WORKSPACE_RW
} al_workspace_mode;

const char *al_network_name(al_network n);
int al_network_from_name(const char *name, al_network *out);
const char *al_workspace_mode_name(al_workspace_mode m);
int al_workspace_mode_from_name(const char *name, al_workspace_mode *out);

typedef struct al_grant {
	al_network network;
	al_workspace_mode workspace;
	char **secrets; /* names only */
	size_t n_secrets;
	bool streaming;
	/* The toolbelt (docs/toolbelt.md): airlock-tool and its socket in
	 * the run, and the host operations it may call (names). */
	bool toolbelt;
	char **operations;
	size_t n_operations;
} al_grant;

/* ---- request -------------------------------------------------------- */

typedef enum al_purpose {
	AL_PURPOSE_SCRIPT = 0,
	AL_PURPOSE_PLUGIN,
	AL_PURPOSE_ASSET
} al_purpose;

typedef enum al_isolation {
	AL_ISOLATION_PREFERRED = 0,
	AL_ISOLATION_REQUIRED
} al_isolation;

const char *al_purpose_name(al_purpose p);
int al_purpose_from_name(const char *name, al_purpose *out);
const char *al_isolation_name(al_isolation i);
int al_isolation_from_name(const char *name, al_isolation *out);

typedef struct al_file {
	char *path;	  /* relative, clean */
	al_bytes content; /* exact bytes */
	unsigned mode;	  /* permission bits, default 0644 */
} al_file;

typedef struct al_env_var {
	char *name;
	char *value;
} al_env_var;

typedef struct al_toolchain_req {
	char *toolchain;  /* canonical toolchain id, e.g. "python" */
	char *constraint; /* "3.11.2", ">=3.10", "<4", ... */
} al_toolchain_req;

/* ---- judged test cases ------------------------------------------- */

#define AL_MAX_TESTS 64 /* cases per request */

typedef enum al_compare {
	AL_COMPARE_EXACT = 0,		 /* byte for byte */
	AL_COMPARE_TRAILING_WHITESPACE /* each line's trailing blanks and
					  trailing empty lines ignored */
} al_compare;

const char *al_compare_name(al_compare c);
int al_compare_from_name(const char *name, al_compare *out);

typedef struct al_test_case {
	al_bytes stdin_data;
	char **argv; /* NULL: the request's argv */
	size_t argc;
	bool has_argv;
	bool has_expected;
	al_bytes expected_stdout;
	/* Limits of this case's run; those not in .set are the request's. */
	al_limits limits;
} al_test_case;

typedef struct al_request {
	char *language;
	al_bytes code;
	char *code_sha256; /* optional pin, lower-case hex; NULL if absent */
	char **argv;
	size_t argc;
	al_bytes stdin_data;
	bool has_stdin; /* false: the program's stdin is closed empty */
	al_file *files;
	size_t n_files;
	char **outputs;
	size_t n_outputs;
	al_purpose purpose;
	al_limits limits;
	al_grant grant;
	al_env_var *env;
	size_t n_env;
	char *idempotency_key; /* NULL if absent */
	al_isolation isolation;
	al_toolchain_req *toolchain;
	size_t n_toolchain;
	/* The program's file name as the caller calls it, shown to the
	 * program as AIRLOCK_SCRIPT_NAME (a plain name: no '/', not "." or
	 * ".."); NULL when absent. */
	char *name;
	/* The execution shape "exec": an argv run directly, no code, no
	 * shell (language is then "exec" and code empty); NULL when the
	 * request runs code. */
	char **exec;
	size_t n_exec;
	/* A durable run whose unacknowledged inbox events this run receives
	 * (docs/durability.md, "Carry-over"); NULL when absent. */
	char *continues;
	/* Compiled languages: the build step's limits (only the
	 * AL_BUILD_LIMIT_BITS fields are used; defaults applied) and the
	 * build flags the request adds (checked against the language's
	 * allow-list). */
	al_limits build_limits;
	char **build_flags;
	size_t n_build_flags;
	/* Judged test cases: built once, each case run in a fresh sandbox. */
	al_test_case *tests;
	size_t n_tests;
	al_compare compare;
	/* A container image by name (docs/containers.md, "Images"), or
	 * NULL: the provider's default.  Only a name from the tenant's
	 * "images" allow-list passes the host's gates, never a path. */
	char *image;
} al_request;

al_request *al_request_new(void);
void al_request_free(al_request *req);
/* Deep copy; NULL on allocation failure. */
al_request *al_request_dup(const al_request *req);

/* ---- facts ---------------------------------------------------------- */

typedef enum al_safety_class {
	AL_SAFETY_DISABLED = 0,
	AL_SAFETY_TRUSTED_LOCAL,
	AL_SAFETY_SANDBOXED,
	AL_SAFETY_CONTAINER,
	AL_SAFETY_REMOTE
} al_safety_class;

const char *al_safety_class_name(al_safety_class c);
int al_safety_class_from_name(const char *name, al_safety_class *out);

typedef struct al_isolation_axes {
	bool process_contained;
	bool host_filesystem_restricted;
	bool privilege_escalation_blocked;
	bool syscalls_restricted;
	bool network_restricted;
} al_isolation_axes;

typedef struct al_language_fact {
	char *language;	 /* "python" */
	char *toolchain; /* canonical toolchain id, "python" */
	char *version;	 /* normalised "3.11.2" */
	char *path;	 /* the real interpreter, shims resolved */
} al_language_fact;

typedef struct al_facts {
	char *provider;
	bool available;
	char *unavailable_reason; /* NULL when available */
	al_safety_class safety_class;
	al_isolation_axes isolation;
	al_language_fact *languages;
	size_t n_languages;
	unsigned limits;    /* AL_LIMIT_* bits truly enforced */
	unsigned network;   /* bit (1u << al_network) per mode offered */
	unsigned workspace; /* bit (1u << al_workspace_mode) per mode */
	bool streaming;
	char *mechanism_json; /* provider-specific JSON object text, or NULL */
	/* What a running program may do with its host (docs/toolbelt.md):
	 * airlock-tool on its PATH, events delivered to its inbox, an
	 * interrupt that reaches it; and the host operations (names) the
	 * asking tenant may be granted, filled in by the host. */
	bool toolbelt;
	bool inject;
	bool interrupt;
	bool exec; /* runs the "exec" shape (an argv, no code) */
	char **host_api;
	size_t n_host_api;
} al_facts;

al_facts *al_facts_new(const char *provider_id, al_safety_class cls);
void al_facts_free(al_facts *facts);
al_facts *al_facts_dup(const al_facts *facts);
/* Appends a language fact (copies the strings). */
int al_facts_add_language(al_facts *facts, const char *language,
			  const char *toolchain, const char *version,
			  const char *path);
const al_language_fact *al_facts_find_language(const al_facts *facts,
					       const char *language);

/* ---- result --------------------------------------------------------- */

enum { AL_STDOUT = 0, AL_STDERR = 1 };

typedef struct al_usage {
	uint64_t wall_ms;
	uint64_t cpu_user_ms;
	uint64_t cpu_sys_ms;
	uint64_t peak_memory_bytes;
} al_usage;

typedef struct al_output_file {
	char *path;
	uint64_t size;
	char sha256[65];
	char *artifact;
	char *refused_reason; /* non-NULL: not collected, and why */
} al_output_file;

/* The build step of a compiled language (NULL in a result when the run
 * had none). */
typedef struct al_build_result {
	al_outcome outcome; /* completed, failed, killed, timed_out, ... */
	char *reason;
	bool has_exit_code;
	int exit_code;
	bool has_signal;
	int signal;
	al_bytes output[2]; /* the compiler's, capped at limits.build.output_bytes */
	bool truncated[2];
	uint64_t wall_ms;
	bool cache_hit; /* the artifact came from the build cache: nothing ran */
} al_build_result;

void al_build_result_free(al_build_result *b);
al_build_result *al_build_result_dup(const al_build_result *b);

typedef enum al_verdict {
	AL_VERDICT_NONE = 0, /* no expected_stdout given */
	AL_VERDICT_ACCEPTED,
	AL_VERDICT_WRONG_ANSWER
} al_verdict;

const char *al_verdict_name(al_verdict v);

/* One judged case's run. */
typedef struct al_case_result {
	al_outcome outcome;
	char *reason;
	bool has_exit_code;
	int exit_code;
	bool has_signal;
	int signal;
	al_bytes output[2];
	bool truncated[2];
	al_usage usage;
	al_verdict verdict;
} al_case_result;

typedef struct al_result {
	char run_id[40];
	al_outcome outcome;
	char *reason; /* NULL or a token: "memory_limit", "gate:grant", ... */
	bool has_exit_code;
	int exit_code;
	bool has_signal;
	int signal;
	al_bytes output[2];	  /* indexed by AL_STDOUT / AL_STDERR */
	bool truncated[2];
	uint64_t output_seen[2];  /* bytes the program wrote, kept or not */
	al_usage usage;
	al_facts *provider;	  /* facts of the provider that ran it, or NULL */
	al_output_file *outputs;
	size_t n_outputs;
	int64_t started_at_ms;	  /* Unix epoch milliseconds; 0 if none */
	int64_t finished_at_ms;
	bool permanent;		  /* retrying the same request cannot help */
	/* Inbox events (docs/durability.md) the program acknowledged, by
	 * event id in delivery order; only events that were delivered. */
	char **inbox_acked;
	size_t n_inbox_acked;
	/* The toolbelt (docs/toolbelt.md), each compact JSON text or NULL:
	 * the events the program emitted (an array), its declaration
	 * ({"outcome", "reason"}), the host operations it called (an array
	 * of {"operation", "outcome"}; never a payload). */
	char *events_json;
	char *declaration_json;
	char *host_calls_json;
	/* Inbox events delivered to the run that it never acknowledged, by
	 * id in delivery order (durable runs); a run that continues this
	 * one receives them. */
	char **inbox_pending;
	size_t n_inbox_pending;
	/* The workspace the run used: its kind ("scratch"), its size bound
	 * in bytes (0: none) and a one-line summary; kind NULL: none
	 * reported. */
	char *workspace_kind;
	uint64_t workspace_bytes;
	char *workspace_summary;
	uint64_t timeout_ms;  /* the wall limit the run ran under; 0: none */
	char *log_artifact;   /* the id of its "log" artifact, or NULL */
	al_build_result *build; /* NULL: no build step */
	al_case_result *cases;	/* judged test cases, in request order */
	size_t n_cases;
} al_result;

al_result *al_result_new(void);
void al_result_free(al_result *res);
/* Sets outcome, reason (copied; may be NULL) and `permanent` as the outcome
 * implies.  Returns 0 or -ENOMEM. */
int al_result_set_outcome(al_result *res, al_outcome outcome,
			  const char *reason);
/* The shape rules of docs/contract.md ("Outcomes"): an exit code only with completed/failed
 * (and exit_code 0 iff completed), a signal only with killed/interrupted,
 * neither on a timeout, no process fields on a refusal.  Returns 0 when the
 * shape is consistent, -EPROTO otherwise. */
int al_result_check_shape(const al_result *res);

/* A new random run id (UUID v4 text) into out[40]. */
void al_run_id_new(char out[40]);

/* The current time, CLOCK_REALTIME, in ms since the epoch. */
int64_t al_now_ms(void);
/* Formats ms (as al_now_ms gives it) as RFC 3339 UTC with milliseconds,
 * "2026-01-02T03:04:05.678Z", into buf (at least 32 bytes). */
void al_format_time_ms(int64_t ms, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
