/* JSON of the contract's build and judged-test parts: request
 * limits.build, build_flags, tests, compare; result build and tests
 * (docs/contract.md). */
#include "json/build_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/json.h>

#include "core/build_contract.h"
#include "json/limits_table.h"

#define PATH_TEXT 96

static int oom(const jf_ctx *c, const char *path)
{
	jf_report(c, path, "could not be stored (out of memory)");
	return -ENOMEM;
}

/* ---- request ---- */

static const char *const build_limit_keys[] = { "wall_ms", "cpu_ms", "memory_bytes",
						"pids", "output_bytes", NULL };

static int parse_limit_object(const jf_ctx *c, const json_t *obj, const char *prefix,
			      unsigned allowed, const char *const *keys, al_limits *out)
{
	int rc;

	if (!json_is_object(obj))
		return jf_fail(c, prefix, "must be an object");
	if ((rc = jf_only_keys(c, obj, prefix, keys)) < 0)
		return rc;
	for (const al_limit_row *row = al_limit_rows; row->bit != 0; row++) {
		const json_t *v = json_object_get(obj, row->name);
		char path[PATH_TEXT];
		uint64_t value;

		if (v == NULL || !(row->bit & allowed))
			continue;
		snprintf(path, sizeof(path), "%s.%s", prefix, row->name);
		if ((rc = jf_uint(c, v, path, 1, row->max, &value)) < 0)
			return rc;
		*al_limit_slot(out, row->bit) = value;
		out->set |= row->bit;
	}
	return 0;
}

static int parse_strings(const jf_ctx *c, const json_t *arr, const char *prefix,
			 size_t max_n, size_t max_len, char ***out, size_t *n_out)
{
	size_t n;

	if (!json_is_array(arr))
		return jf_fail(c, prefix, "must be an array");
	n = json_array_size(arr);
	if (n > max_n)
		return jf_fail(c, prefix, "has more than %zu items", max_n);
	*out = calloc(n + 1, sizeof(**out));
	if (!*out)
		return oom(c, prefix);
	*n_out = n;
	for (size_t i = 0; i < n; i++) {
		char path[PATH_TEXT];
		const char *s;
		int rc;

		snprintf(path, sizeof(path), "%s[%zu]", prefix, i);
		rc = jf_string(c, json_array_get(arr, i), path, max_len, 0, &s, NULL);
		if (rc < 0)
			return rc;
		if (!((*out)[i] = strdup(s)))
			return oom(c, path);
	}
	return 0;
}

static const char *const case_keys[] = { "stdin", "stdin_b64", "argv", "expected_stdout",
					 "expected_stdout_b64", "limits", NULL };
static const char *const case_limit_keys[] = { "wall_ms", "cpu_ms", "memory_bytes",
					       "pids", "output_bytes", "file_bytes",
					       "open_files", NULL };
#define CASE_LIMIT_BITS                                                         \
	(AL_LIMIT_WALL_MS | AL_LIMIT_CPU_MS | AL_LIMIT_MEMORY_BYTES | AL_LIMIT_PIDS | \
	 AL_LIMIT_OUTPUT_BYTES | AL_LIMIT_FILE_BYTES | AL_LIMIT_OPEN_FILES)

static int parse_case(const jf_ctx *c, const json_t *o, size_t i, al_test_case *t)
{
	char path[32], p1[PATH_TEXT], p2[PATH_TEXT];
	const json_t *v;
	bool present;
	int rc;

	snprintf(path, sizeof(path), "tests[%zu]", i);
	if (!json_is_object(o))
		return jf_fail(c, path, "must be an object");
	if ((rc = jf_only_keys(c, o, path, case_keys)) < 0)
		return rc;
	snprintf(p1, sizeof(p1), "%s.stdin", path);
	snprintf(p2, sizeof(p2), "%s.stdin_b64", path);
	if ((rc = jf_bytes(c, o, "stdin", "stdin_b64", p1, p2, AL_MAX_STDIN_BYTES,
			   &t->stdin_data, &present)) < 0)
		return rc;
	snprintf(p1, sizeof(p1), "%s.expected_stdout", path);
	snprintf(p2, sizeof(p2), "%s.expected_stdout_b64", path);
	if ((rc = jf_bytes(c, o, "expected_stdout", "expected_stdout_b64", p1, p2,
			   AL_MAX_STDIN_BYTES, &t->expected_stdout, &t->has_expected)) < 0)
		return rc;
	if ((v = json_object_get(o, "argv")) != NULL) {
		snprintf(p1, sizeof(p1), "%s.argv", path);
		if ((rc = parse_strings(c, v, p1, AL_MAX_ARGS, AL_MAX_ARG_BYTES, &t->argv,
					&t->argc)) < 0)
			return rc;
		t->has_argv = true;
	}
	if ((v = json_object_get(o, "limits")) != NULL) {
		snprintf(p1, sizeof(p1), "%s.limits", path);
		if ((rc = parse_limit_object(c, v, p1, CASE_LIMIT_BITS, case_limit_keys,
					     &t->limits)) < 0)
			return rc;
	}
	return 0;
}

int al_build_request_parse(const jf_ctx *c, const json_t *root, al_request *req)
{
	const json_t *limits = json_object_get(root, "limits");
	const json_t *v;
	int rc;

	if (json_is_object(limits) && (v = json_object_get(limits, "build")) != NULL) {
		if ((rc = parse_limit_object(c, v, "limits.build", AL_BUILD_LIMIT_BITS,
					     build_limit_keys, &req->build_limits)) < 0)
			return rc;
	}
	al_build_limits_apply_defaults(&req->build_limits);
	if ((v = json_object_get(root, "build_flags")) != NULL &&
	    (rc = parse_strings(c, v, "build_flags", AL_MAX_BUILD_FLAGS_JSON, 64,
				&req->build_flags, &req->n_build_flags)) < 0)
		return rc;
	if ((v = json_object_get(root, "compare")) != NULL) {
		const char *s;

		if ((rc = jf_string(c, v, "compare", 64, 0, &s, NULL)) < 0)
			return rc;
		if (al_compare_from_name(s, &req->compare) < 0)
			return jf_fail(c, "compare", "must be \"exact\" or \"trailing_whitespace\"");
	}
	if ((v = json_object_get(root, "tests")) != NULL) {
		size_t n;

		if (!json_is_array(v))
			return jf_fail(c, "tests", "must be an array");
		n = json_array_size(v);
		if (n == 0 || n > AL_MAX_TESTS)
			return jf_fail(c, "tests", "must hold 1 to %u cases", AL_MAX_TESTS);
		req->tests = calloc(n, sizeof(*req->tests));
		if (!req->tests)
			return oom(c, "tests");
		req->n_tests = n;
		for (size_t i = 0; i < n; i++) {
			req->tests[i].stdin_data.data = calloc(1, 1);
			req->tests[i].expected_stdout.data = calloc(1, 1);
			if (!req->tests[i].stdin_data.data || !req->tests[i].expected_stdout.data)
				return oom(c, "tests");
		}
		for (size_t i = 0; i < n; i++)
			if ((rc = parse_case(c, json_array_get(v, i), i, &req->tests[i])) < 0)
				return rc;
	}
	return 0;
}

static json_t *limits_json(const al_limits *l, unsigned bits)
{
	json_t *o = json_object();

	for (const al_limit_row *row = al_limit_rows; o && row->bit != 0; row++)
		if ((l->set & bits & row->bit) &&
		    jf_set(o, row->name, json_integer((json_int_t)al_limit_get(l, row->bit))) < 0) {
			json_decref(o);
			return NULL;
		}
	return o;
}

static json_t *strings_json(char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

int al_build_request_emit(json_t *root, const al_request *req)
{
	json_t *limits = json_object_get(root, "limits");

	/* Only what the request set explicitly travels: the receiving side
	 * applies the same defaults. */
	if (req->build_limits.set & AL_BUILD_LIMIT_BITS) {
		if (!json_is_object(limits))
			return -EINVAL;
		if (jf_set(limits, "build", limits_json(&req->build_limits, AL_BUILD_LIMIT_BITS)) < 0)
			return -ENOMEM;
	}
	if (req->n_build_flags &&
	    jf_set(root, "build_flags", strings_json(req->build_flags, req->n_build_flags)) < 0)
		return -ENOMEM;
	if (req->compare != AL_COMPARE_EXACT &&
	    jf_set(root, "compare", json_string(al_compare_name(req->compare))) < 0)
		return -ENOMEM;
	if (req->n_tests == 0)
		return 0;
	json_t *arr = json_array();
	if (jf_set(root, "tests", arr) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < req->n_tests; i++) {
		const al_test_case *t = &req->tests[i];
		json_t *o = json_object();

		if (json_array_append_new(arr, o) < 0 || !o ||
		    jf_set_bytes(o, "stdin", "stdin_b64", &t->stdin_data) < 0 ||
		    (t->has_argv && jf_set(o, "argv", strings_json(t->argv, t->argc)) < 0) ||
		    (t->has_expected && jf_set_bytes(o, "expected_stdout", "expected_stdout_b64",
						     &t->expected_stdout) < 0) ||
		    (t->limits.set && jf_set(o, "limits", limits_json(&t->limits, CASE_LIMIT_BITS)) < 0))
			return -ENOMEM;
	}
	return 0;
}

/* ---- result ---- */

static const char *const stream_key[2] = { "stdout", "stderr" };
static const char *const stream_b64_key[2] = { "stdout_b64", "stderr_b64" };
static const char *const truncated_key[2] = { "stdout_truncated", "stderr_truncated" };

static json_t *opt_int(bool has, int v)
{
	return has ? json_integer(v) : json_null();
}

/* The fields a build and a case share. */
static int emit_process(json_t *o, al_outcome outcome, const char *reason, bool has_exit,
			int exit_code, bool has_signal, int sig, const al_bytes out[2],
			const bool truncated[2])
{
	if (jf_set(o, "outcome", jf_string_or_null(al_outcome_name(outcome))) < 0 ||
	    jf_set(o, "reason", jf_string_or_null(reason)) < 0 ||
	    jf_set(o, "exit_code", opt_int(has_exit, exit_code)) < 0 ||
	    jf_set(o, "signal", opt_int(has_signal, sig)) < 0)
		return -ENOMEM;
	for (int s = 0; s < 2; s++)
		if (jf_set_bytes(o, stream_key[s], stream_b64_key[s], &out[s]) < 0 ||
		    jf_set(o, truncated_key[s], json_boolean(truncated[s])) < 0)
			return -ENOMEM;
	return 0;
}

int al_build_result_emit(json_t *root, const al_result *r)
{
	if (r->build) {
		const al_build_result *b = r->build;
		json_t *o = json_object();

		if (jf_set(root, "build", o) < 0 ||
		    emit_process(o, b->outcome, b->reason, b->has_exit_code, b->exit_code,
				 b->has_signal, b->signal, b->output, b->truncated) < 0 ||
		    jf_set(o, "wall_ms", json_integer((json_int_t)b->wall_ms)) < 0 ||
		    jf_set(o, "cache_hit", json_boolean(b->cache_hit)) < 0)
			return -ENOMEM;
	}
	if (r->n_cases == 0)
		return 0;
	json_t *arr = json_array();
	if (jf_set(root, "tests", arr) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_cases; i++) {
		const al_case_result *k = &r->cases[i];
		json_t *o = json_object(), *u = json_object();

		if (json_array_append_new(arr, o) < 0 || !o ||
		    emit_process(o, k->outcome, k->reason, k->has_exit_code, k->exit_code,
				 k->has_signal, k->signal, k->output, k->truncated) < 0 ||
		    jf_set(o, "usage", u) < 0 ||
		    jf_set(u, "wall_ms", json_integer((json_int_t)k->usage.wall_ms)) < 0 ||
		    jf_set(u, "cpu_user_ms", json_integer((json_int_t)k->usage.cpu_user_ms)) < 0 ||
		    jf_set(u, "cpu_sys_ms", json_integer((json_int_t)k->usage.cpu_sys_ms)) < 0 ||
		    jf_set(u, "peak_memory_bytes",
			   json_integer((json_int_t)k->usage.peak_memory_bytes)) < 0 ||
		    jf_set(o, "verdict", jf_string_or_null(al_verdict_name(k->verdict))) < 0)
			return -ENOMEM;
	}
	return 0;
}

static const char *const process_keys[] = {
	"outcome", "reason", "exit_code", "signal", "stdout", "stdout_b64", "stderr",
	"stderr_b64", "stdout_truncated", "stderr_truncated", "wall_ms", "cache_hit",
	"usage", "verdict", NULL,
};

typedef struct proc_fields {
	al_outcome *outcome;
	char **reason;
	bool *has_exit;
	int *exit_code;
	bool *has_signal;
	int *sig;
	al_bytes *out;
	bool *truncated;
} proc_fields;

static int parse_process(const jf_ctx *c, const json_t *o, const char *path, proc_fields *f)
{
	char p[PATH_TEXT + 32], p2[PATH_TEXT + 32];
	const json_t *v;
	const char *s;
	int64_t n;
	int rc;

	if (!json_is_object(o))
		return jf_fail(c, path, "must be an object");
	if ((rc = jf_only_keys(c, o, path, process_keys)) < 0)
		return rc;
	snprintf(p, sizeof(p), "%s.outcome", path);
	if ((rc = jf_string(c, json_object_get(o, "outcome"), p, 64, 0, &s, NULL)) < 0)
		return rc;
	if (al_outcome_from_name(s, f->outcome) < 0)
		return jf_fail(c, p, "is not an outcome");
	if ((v = json_object_get(o, "reason")) != NULL && !json_is_null(v)) {
		snprintf(p, sizeof(p), "%s.reason", path);
		if ((rc = jf_string(c, v, p, 256, 0, &s, NULL)) < 0)
			return rc;
		if (!(*f->reason = strdup(s)))
			return oom(c, p);
	}
	if ((v = json_object_get(o, "exit_code")) != NULL && !json_is_null(v)) {
		snprintf(p, sizeof(p), "%s.exit_code", path);
		if ((rc = jf_int(c, v, p, 0, 255, &n)) < 0)
			return rc;
		*f->has_exit = true;
		*f->exit_code = (int)n;
	}
	if ((v = json_object_get(o, "signal")) != NULL && !json_is_null(v)) {
		snprintf(p, sizeof(p), "%s.signal", path);
		if ((rc = jf_int(c, v, p, 1, 128, &n)) < 0)
			return rc;
		*f->has_signal = true;
		*f->sig = (int)n;
	}
	for (int st = 0; st < 2; st++) {
		bool present;

		snprintf(p, sizeof(p), "%s.%s", path, stream_key[st]);
		snprintf(p2, sizeof(p2), "%s.%s", path, stream_b64_key[st]);
		if ((rc = jf_bytes(c, o, stream_key[st], stream_b64_key[st], p, p2,
				   AL_MAX_REQUEST_BYTES, &f->out[st], &present)) < 0)
			return rc;
		if ((v = json_object_get(o, truncated_key[st])) != NULL) {
			snprintf(p, sizeof(p), "%s.%s", path, truncated_key[st]);
			if ((rc = jf_bool(c, v, p, &f->truncated[st])) < 0)
				return rc;
		}
	}
	return 0;
}

int al_build_result_parse(const jf_ctx *c, const json_t *root, al_result *r)
{
	const json_t *v;
	int rc;

	if ((v = json_object_get(root, "build")) != NULL && !json_is_null(v)) {
		al_build_result *b = calloc(1, sizeof(*b));
		uint64_t ms = 0;

		if (!b)
			return oom(c, "build");
		r->build = b;
		proc_fields f = { &b->outcome, &b->reason, &b->has_exit_code, &b->exit_code,
				  &b->has_signal, &b->signal, b->output, b->truncated };
		if ((rc = parse_process(c, v, "build", &f)) < 0)
			return rc;
		if (json_object_get(v, "wall_ms") &&
		    (rc = jf_uint(c, json_object_get(v, "wall_ms"), "build.wall_ms", 0,
				  UINT64_MAX >> 1, &ms)) < 0)
			return rc;
		b->wall_ms = ms;
		if (json_object_get(v, "cache_hit") &&
		    (rc = jf_bool(c, json_object_get(v, "cache_hit"), "build.cache_hit",
				  &b->cache_hit)) < 0)
			return rc;
	}
	if ((v = json_object_get(root, "tests")) != NULL && !json_is_null(v)) {
		size_t n;

		if (!json_is_array(v) || (n = json_array_size(v)) > AL_MAX_TESTS)
			return jf_fail(c, "tests", "must be an array of at most %u", AL_MAX_TESTS);
		r->cases = calloc(n ? n : 1, sizeof(*r->cases));
		if (!r->cases)
			return oom(c, "tests");
		r->n_cases = n;
		for (size_t i = 0; i < n; i++) {
			al_case_result *k = &r->cases[i];
			const json_t *o = json_array_get(v, i), *u, *vd;
			char path[32];

			snprintf(path, sizeof(path), "tests[%zu]", i);
			proc_fields f = { &k->outcome, &k->reason, &k->has_exit_code, &k->exit_code,
					  &k->has_signal, &k->signal, k->output, k->truncated };
			if ((rc = parse_process(c, o, path, &f)) < 0)
				return rc;
			if ((u = json_object_get(o, "usage")) != NULL && json_is_object(u)) {
				const char *const uk[] = { "wall_ms", "cpu_user_ms", "cpu_sys_ms",
							   "peak_memory_bytes" };
				uint64_t *slots[] = { &k->usage.wall_ms, &k->usage.cpu_user_ms,
						      &k->usage.cpu_sys_ms,
						      &k->usage.peak_memory_bytes };

				for (int j = 0; j < 4; j++) {
					const json_t *x = json_object_get(u, uk[j]);

					if (x && (rc = jf_uint(c, x, path, 0, UINT64_MAX >> 1,
							       slots[j])) < 0)
						return rc;
				}
			}
			if ((vd = json_object_get(o, "verdict")) != NULL && !json_is_null(vd) &&
			    al_verdict_from_name(json_string_value(vd), &k->verdict) < 0)
				return jf_fail(c, path, "has an unknown verdict");
		}
	}
	return 0;
}
