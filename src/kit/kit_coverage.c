/* The coverage case: a table from every outcome and every fact field to
 * the kit cases that exercise it.  An outcome added to the enum, or a
 * field added to the facts, without a row here fails the "coverage" case
 * (outcomes are iterated up to AL_OUTCOME__COUNT; the fact structs' sizes
 * are pinned below so a new field breaks the build until it is mapped).
 * Outcomes only the host pipeline produces are listed as host-produced
 * with where they are tested.  The table is also checked against what
 * this very run observed: an outcome whose "proving" case passed must
 * have been seen. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kit/kit.h"

#define MAXC 6

typedef struct outcome_row {
	al_outcome outcome;
	/* Cases whose pass means this outcome was produced. */
	const char *proves[MAXC];
	/* Cases that may produce it, depending on the facts. */
	const char *may[MAXC];
	/* Where the host produces it, or NULL. */
	const char *host;
} outcome_row;

static const outcome_row outcome_rows[] = {
	{AL_OUTCOME_COMPLETED, {"io.stdin_delivered", "io.empty_program"},
	 {NULL}, NULL},
	{AL_OUTCOME_FAILED, {"exit.status_and_stderr"},
	 {"limit.memory_bytes", "limit.pids"}, NULL},
	{AL_OUTCOME_KILLED, {"exit.signal", "limit.cpu_ms"},
	 {"limit.memory_bytes", "limit.pids", "limit.file_bytes",
	  "limit.socket_bytes", "bounds.writable_areas"},
	 NULL},
	{AL_OUTCOME_TIMED_OUT, {NULL}, {"limit.wall_ms"},
	 "host: wall + grace deadline (tests/unit/test_host_*.c)"},
	{AL_OUTCOME_INTERRUPTED, {"interrupt.by_run_id"}, {NULL}, NULL},
	{AL_OUTCOME_CANCELLED, {"cancel.caller"}, {NULL}, NULL},
	{AL_OUTCOME_INVALID_REQUEST, {NULL}, {NULL},
	 "host: validate, step 1 (tests/unit/test_json_request.c, "
	 "tests/unit/test_host_*.c)"},
	{AL_OUTCOME_DENIED, {NULL}, {NULL},
	 "host: gates, steps 3-5 (tests/unit/test_host_*.c)"},
	{AL_OUTCOME_UNSUPPORTED_LANGUAGE, {"language.unknown"},
	 {"language.absent"}, "host: selection, step 6"},
	{AL_OUTCOME_UNENFORCEABLE_LIMIT, {"grant.network_unoffered"},
	 {"limit.wall_ms", "limit.cpu_ms", "limit.memory_bytes", "limit.pids",
	  "limit.workspace_bytes", "limit.socket_bytes"},
	 "host: selection, step 6"},
	{AL_OUTCOME_DISABLED, {"disabled.every_request"}, {NULL},
	 "host: enabled?, step 2 (tests/unit/test_host_*.c)"},
	{AL_OUTCOME_UNAVAILABLE, {"unavailable.refuses"}, {NULL},
	 "host: audit_refused, busy, selection (tests/unit/test_host_*.c)"},
	{AL_OUTCOME_CONFLICT, {NULL}, {NULL},
	 "host: idempotency, step 7 (tests/unit/test_host_*.c)"},
};

typedef struct fact_row {
	const char *field;
	const char *cases[MAXC];
} fact_row;

/* A new field changes these sizes: map it below, then update the pin. */
_Static_assert(sizeof(al_isolation_axes) == 5,
	       "al_isolation_axes changed: add its field to fact_rows");
_Static_assert(sizeof(al_facts) == 104,
	       "al_facts changed: add its field to fact_rows");

static const fact_row fact_rows[] = {
	{"provider", {"probe.facts"}},
	{"available", {"probe.facts", "unavailable.refuses", "provider.ensure"}},
	{"unavailable_reason", {"probe.facts"}},
	{"safety_class", {"disabled.every_request", "exit.leftover_killed"}},
	{"isolation.process_contained", {"isolation.process_contained"}},
	{"isolation.host_filesystem_restricted",
	 {"isolation.host_filesystem_restricted"}},
	{"isolation.privilege_escalation_blocked",
	 {"isolation.privilege_escalation_blocked"}},
	{"isolation.syscalls_restricted", {"isolation.syscalls_restricted"}},
	{"isolation.network_restricted", {"isolation.network_restricted"}},
	{"languages", {"probe.language.sh", "probe.language.python",
		       "language.absent"}},
	{"languages[].version", {"probe.language.python",
				 "probe.language.bash",
				 "probe.language.javascript",
				 "probe.language.ruby"}},
	{"languages[].path", {"probe.facts"}},
	{"limits", {"limit.wall_ms", "limit.cpu_ms", "limit.memory_bytes",
		    "limit.pids", "limit.output_bytes", "limit.socket_bytes"}},
	{"network", {"grant.network_unoffered",
		     "isolation.network_restricted"}},
	{"workspace", {"grant.workspace_modes"}},
	{"streaming", {"grant.streaming"}},
	{"exec", {"exec.argv"}},
	{"mechanism", {"probe.facts"}},
	{"toolbelt", {"toolbelt"}},
	{"inject", {"inject.inbox"}},
	{"interrupt", {"interrupt.by_run_id"}},
	{"host_api", {"host_api"}},
};

static void add(char *buf, size_t cap, const char *what)
{
	size_t len = strlen(buf);
	snprintf(buf + len, cap - len, "%s%s", len ? "; " : "", what);
}

static al_kit_status status_of(const kit_ctx *k, const char *name)
{
	const al_kit_case_result *r = al_kit_report_find(k->report, name);
	return r != NULL ? r->status : AL_KIT_SKIP;
}

void kit_case_coverage(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	char bad[2048] = "", item[256];
	const size_t n_rows = sizeof(outcome_rows) / sizeof(outcome_rows[0]);
	unsigned observed;

	pthread_mutex_lock(&k->lock);
	observed = k->observed;
	pthread_mutex_unlock(&k->lock);

	for (unsigned o = 0; o < AL_OUTCOME__COUNT; o++) {
		const outcome_row *row = NULL;
		for (size_t i = 0; i < n_rows; i++)
			if ((unsigned)outcome_rows[i].outcome == o)
				row = &outcome_rows[i];
		if (row == NULL || (row->proves[0] == NULL &&
				    row->may[0] == NULL && row->host == NULL)) {
			snprintf(item, sizeof(item), "outcome %s has no case",
				 al_outcome_name((al_outcome)o));
			add(bad, sizeof(bad), item);
			continue;
		}
		for (int i = 0; i < MAXC; i++) {
			const char *names[2] = {row->proves[i], row->may[i]};
			for (int j = 0; j < 2; j++) {
				if (names[j] != NULL &&
				    !kit_case_registered(names[j])) {
					snprintf(item, sizeof(item),
						 "outcome %s maps to unknown "
						 "case %s",
						 al_outcome_name((al_outcome)o),
						 names[j]);
					add(bad, sizeof(bad), item);
				}
			}
			/* A proving case that passed must have produced it. */
			if (row->proves[i] != NULL &&
			    status_of(k, row->proves[i]) == AL_KIT_PASS &&
			    !(observed & (1u << o))) {
				snprintf(item, sizeof(item),
					 "%s passed but outcome %s was never "
					 "seen",
					 row->proves[i],
					 al_outcome_name((al_outcome)o));
				add(bad, sizeof(bad), item);
			}
		}
	}
	for (size_t i = 0; i < sizeof(fact_rows) / sizeof(fact_rows[0]); i++) {
		const fact_row *f = &fact_rows[i];
		if (f->cases[0] == NULL) {
			snprintf(item, sizeof(item), "fact %s has no case",
				 f->field);
			add(bad, sizeof(bad), item);
		}
		for (int j = 0; j < MAXC && f->cases[j] != NULL; j++) {
			if (!kit_case_registered(f->cases[j])) {
				snprintf(item, sizeof(item),
					 "fact %s maps to unknown case %s",
					 f->field, f->cases[j]);
				add(bad, sizeof(bad), item);
			}
		}
	}
	/* Every limit bit has its own case. */
	for (unsigned b = 1; b & AL_LIMIT__ALL; b <<= 1) {
		snprintf(item, sizeof(item), "limit.%s", al_limit_name(b));
		if (!kit_case_registered(item)) {
			char msg[300];
			snprintf(msg, sizeof(msg), "limit %s has no case",
				 al_limit_name(b));
			add(bad, sizeof(bad), msg);
		}
	}
	if (bad[0] != '\0')
		kit_fail(c, "uncovered: %s", bad);
	else
		kit_pass(c);
}
