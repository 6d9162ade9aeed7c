/* airlock — the conformance kit (libairlock-contract.a).
 *
 * Runs the whole provider contract against one provider, through its
 * operations table directly: probe, ensure, then every case (each builds
 * al_request structs and calls execute), health, release.  Each case is
 * reported by name as pass, fail (expected vs seen) or skip (why).  Skips
 * come only from the provider's own probed facts — a language it reports
 * absent, an isolation axis it does not claim, a limit it does not
 * advertise — never from a list of provider names.  docs/conformance.md
 * describes every case.
 *
 * Typical use (the CLI's `airlock contract`):
 *
 *	al_kit_report *rep = NULL;
 *	if (al_kit_run(ops, config_json, NULL, &rep, &err) < 0) ...;
 *	json ? puts(al_kit_report_to_json(rep)) : al_kit_report_print(rep, stdout);
 *	status = al_kit_report_failures(rep) ? 1 : 0;
 *	al_kit_report_free(rep);
 *
 * The kit sets one marker variable in its own environment while it runs
 * (to prove no host variable reaches a program), so call it before
 * starting threads that read the environment.
 */
#ifndef AIRLOCK_CONTRACT_KIT_H
#define AIRLOCK_CONTRACT_KIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <airlock/provider.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum al_kit_status {
	AL_KIT_PASS = 0,
	AL_KIT_FAIL,
	AL_KIT_SKIP
} al_kit_status;

/* "pass", "fail", "skip". */
const char *al_kit_status_name(al_kit_status status);

typedef struct al_kit_case_result {
	char *name;	    /* "io.stdin_delivered", "limit.memory_bytes", ... */
	al_kit_status status;
	char *reason;	    /* fail: expected vs seen; skip: why; pass: NULL */
	uint64_t elapsed_ms;
} al_kit_case_result;

typedef struct al_kit_report {
	char *provider; /* ops->id */
	al_kit_case_result *cases;
	size_t n_cases;
} al_kit_report;

typedef struct al_kit_options {
	/* Comma-separated name prefixes ("limit.,isolation.network"): only
	 * matching cases run (the others are not reported).  NULL: all. */
	const char *only;
	/* When non-NULL, one line per case is written here as it finishes. */
	FILE *progress;
} al_kit_options;

/* Runs the kit.  *out always receives a report when 0 is returned, also
 * when the provider's probe or ensure failed (that is a failed case, not
 * an error of the kit).  Negative errno (with err) only for bad arguments
 * or when the kit itself cannot run (allocation, its temp directory). */
int al_kit_run(const al_provider_ops *ops, const char *config_json,
	       const al_kit_options *opts, al_kit_report **out, al_error **err);

/* {"provider": ID, "cases": [{"name", "status": "pass"|"fail"|"skip",
 *  "reason": text|null, "elapsed_ms": n}], "passed": n, "failed": n,
 *  "skipped": n}.  Caller frees; NULL on allocation failure. */
char *al_kit_report_to_json(const al_kit_report *r);
/* Human form: one line per case, then a summary line. */
void al_kit_report_print(const al_kit_report *r, FILE *fp);
size_t al_kit_report_failures(const al_kit_report *r);
/* The case named `name`, or NULL. */
const al_kit_case_result *al_kit_report_find(const al_kit_report *r,
					     const char *name);
void al_kit_report_free(al_kit_report *r);

#ifdef __cplusplus
}
#endif
#endif
