/* Internal: the conformance kit's context, case registry and run helpers.
 *
 * A case is a function that gets the kit context and its own result slot;
 * it builds requests with kit_req_*, runs them with kit_exec and ends with
 * exactly one of kit_pass / kit_fail / kit_skip.  Every result any case
 * sees goes through kit_exec, which checks its shape and records the
 * outcome, so the "result.shape" and "coverage" cases can judge them all.
 */
#ifndef AL_KIT_KIT_H
#define AL_KIT_KIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <airlock/contract.h>
#include <airlock/contract_kit.h>
#include <airlock/provider.h>

typedef struct kit_ctx kit_ctx;
typedef struct kit_case kit_case;

typedef void (*kit_case_fn)(kit_ctx *k, kit_case *c, const void *arg);

typedef struct kit_case_def {
	const char *name;
	kit_case_fn fn;
	const void *arg; /* a limit bit, a language name, ... */
} kit_case_def;

/* The registry, in run order (kit_cases.c); NULL-name terminated. */
extern const kit_case_def kit_case_defs[];
bool kit_case_registered(const char *name);

struct kit_case {
	const char *name;
	al_kit_status status;
	char *reason;
	bool decided;
};

struct kit_ctx {
	const al_provider_ops *ops;
	const char *config_json;
	int probe_rc;		    /* ops->probe's return */
	char *probe_error;	    /* its message when it failed */
	al_facts *facts;	    /* NULL when the probe failed */
	al_provider_handle *handle; /* NULL when ensure failed or not tried */
	char *ensure_error;	    /* why ensure failed, when it did */
	const char *lang;	    /* generic language: sh, python or bash */
	bool lang_is_python;
	al_network network;	    /* grant used by generic requests */
	al_workspace_mode workspace;
	char hostdir[64];	    /* host dir the kit owns: markers, scripts */
	char marker_name[64];	    /* host env variable set by the kit */
	char marker_value[64];
	unsigned long run_seq;
	pthread_mutex_t lock;	    /* guards run_seq, shape, observed */
	char *shape_problems;	    /* "case: why; ..." */
	size_t shape_checked;
	unsigned observed;	    /* bit per al_outcome seen */
	const al_kit_report *report; /* cases so far (for coverage) */
};

void kit_pass(kit_case *c);
void kit_fail(kit_case *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void kit_skip(kit_case *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Generic-case gate: skips the case (and returns false) when the facts
 * say no generic program can run here (disabled, unavailable, no sh /
 * python / bash). */
bool kit_need_runner(kit_ctx *k, kit_case *c);
/* Same for a specific language. */
bool kit_need_language(kit_ctx *k, kit_case *c, const char *language);

/* ---- requests ------------------------------------------------------- */

/* A request in k->lang running sh_code (sh and bash) or py_code (python),
 * with the grant chosen from the facts.  NULL on allocation failure (the
 * case is failed). */
al_request *kit_req(kit_ctx *k, kit_case *c, const char *sh_code,
		    const char *py_code);
/* A request in an explicit language. */
al_request *kit_req_lang(kit_ctx *k, kit_case *c, const char *language,
			 const char *code);
int kit_req_stdin(al_request *req, const void *data, size_t len);
int kit_req_argv(al_request *req, const char *const *argv, size_t argc);
int kit_req_env(al_request *req, const char *name, const char *value);
void kit_req_limit(al_request *req, unsigned bit, uint64_t value);

/* ---- execution ------------------------------------------------------ */

#define KIT_STARTED_WAIT_MS 10000u

typedef struct kit_exec_opts {
	/* Fire the run's cancel token with cancel_kind after cancel_after_ms
	 * (0: never). */
	uint64_t cancel_after_ms;
	al_cancel_kind cancel_kind;
	/* Call ops->interrupt(run_id) after interrupt_after_ms (0: never),
	 * retrying while it says -ESRCH and the run has not returned. */
	uint64_t interrupt_after_ms;
	/* When set (a host-visible file the program writes once it runs),
	 * both delays count from when it appears — looked for every 10 ms,
	 * at most KIT_STARTED_WAIT_MS — so a loaded machine's slow start is
	 * not taken for the provider's failure to stop. */
	const char *started_file;
	const char *const *host_env;
	size_t n_host_env;
	al_output_fn on_output;
	void *on_output_ctx;
	/* The toolbelt and the inbox a case serves (al_exec's fields). */
	const char *tool_dir, *tool_bin_dir, *tool_token;
	const char *inbox_dir, *inbox_acks_dir;
} kit_exec_opts;

typedef struct kit_run {
	al_result *res;	    /* NULL when execute failed */
	int rc;		    /* execute's return */
	char *error;	    /* execute's error message when rc < 0 */
	uint64_t elapsed_ms; /* measured by the kit */
	char run_id[40];
	bool watchdog_fired; /* the kit had to cancel a run that overran */
	int interrupt_rc;    /* last ops->interrupt return (opts asked) */
	/* When the kit fired the cancel or called interrupt, from the
	 * start (0: it did not). */
	uint64_t stopped_at_ms;
} kit_run;

/* Runs req on k->handle.  Checks and records the result's shape.  Returns
 * 0 when a result was produced; otherwise fails the case and returns < 0.
 * A watchdog cancels a run still going 20 s past its wall limit + grace so
 * a hanging provider fails the case instead of hanging the kit. */
int kit_exec(kit_ctx *k, kit_case *c, const al_request *req,
	     const kit_exec_opts *opts, kit_run *out);
void kit_run_clear(kit_run *r);

/* Describes a result for a failure message: outcome, reason, exit code,
 * signal, first bytes of each stream (escaped).  Static buffer per
 * thread. */
const char *kit_describe(const al_result *res);
/* Output stream as a NUL-terminated string (al_bytes always is). */
const char *kit_out(const al_result *res, int stream);
bool kit_out_has(const al_result *res, int stream, const char *needle);
/* Expects `outcome`; fails the case with a description otherwise. */
bool kit_expect_outcome(kit_case *c, const kit_run *r, al_outcome outcome);
/* The common case: skipped unless a generic program can run
 * (kit_need_runner), then kit_req(sh_code, py_code) is run and expected
 * to end with `outcome`.  True when *r holds that result; false when the
 * case was skipped or failed.  *r is the caller's to clear. */
bool kit_run_code(kit_ctx *k, kit_case *c, const char *sh_code,
		  const char *py_code, al_outcome outcome, kit_run *r);
/* Expects a refusal: the outcome, no process fields, nothing ran. */
bool kit_expect_refusal(kit_case *c, const kit_run *r, al_outcome outcome);

/* A fresh token unique to this kit run ("kt<pid>x<n>"). */
void kit_token(kit_ctx *k, char *buf, size_t len);
/* Path under k->hostdir; buf of PATH_MAX. */
void kit_host_path(kit_ctx *k, const char *name, char *buf, size_t len);
/* True when pid on this host is alive and its comm is `comm`. */
bool kit_host_pid_alive(long pid, const char *comm);
/* Facts say the program's pids and files are the host's own: a trusted
 * local provider that does not restrict the host filesystem. */
bool kit_host_visible(const kit_ctx *k);
/* Sleeps ms milliseconds. */
void kit_sleep_ms(uint64_t ms);

/* ---- coverage (kit_coverage.c) ------------------------------------- */
void kit_case_coverage(kit_ctx *k, kit_case *c, const void *arg);

#endif
