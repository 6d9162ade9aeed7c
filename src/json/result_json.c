/* The JSON form of a result (docs/contract.md, "Result"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include <airlock/json.h>

#include "core/util.h"
#include "json/contract_json.h"
#include "json/build_json.h"
#include "json/field_codec.h"
#include "json/toolbelt_json.h"
#include "json/result_fields.h"

#define MAX_STREAM_BYTES (128u * 1024u * 1024u) /* twice the output cap */
#define MAX_RESULT_OUTPUTS 4096u
#define MAX_RESULT_TEXT 4096u /* artifact references, refusal reasons */
#define MAX_REASON_BYTES 256u

static const char *const stream_key[2] = {"stdout", "stderr"};
static const char *const stream_b64_key[2] = {"stdout_b64", "stderr_b64"};
static const char *const truncated_key[2] = {"stdout_truncated",
					     "stderr_truncated"};
static const char *const bytes_key[2] = {"stdout_bytes", "stderr_bytes"};

/* ---- to JSON ------------------------------------------------------- */

static json_t *time_json(int64_t ms)
{
	if (ms <= 0)
		return json_null();
	char buf[40];
	al_format_time_ms(ms, buf, sizeof(buf));
	return json_string(buf);
}

static json_t *usage_json(const al_usage *u)
{
	json_t *o = json_object();
	if (o == NULL ||
	    jf_set(o, "wall_ms", json_integer((json_int_t)u->wall_ms)) < 0 ||
	    jf_set(o, "cpu_user_ms", json_integer((json_int_t)u->cpu_user_ms)) <
		    0 ||
	    jf_set(o, "cpu_sys_ms", json_integer((json_int_t)u->cpu_sys_ms)) <
		    0 ||
	    jf_set(o, "peak_memory_bytes",
		   json_integer((json_int_t)u->peak_memory_bytes)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *provider_json(const al_facts *f)
{
	if (f == NULL)
		return json_null();
	json_t *o = json_object();
	if (o == NULL || jf_set(o, "id", jf_string_or_null(f->provider)) < 0 ||
	    jf_set(o, "safety_class",
		   jf_string_or_null(al_safety_class_name(f->safety_class))) <
		    0 ||
	    jf_set(o, "isolation", al_isolation_to_json(&f->isolation)) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *outputs_json(const al_result *r)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr != NULL && i < r->n_outputs; i++) {
		const al_output_file *f = &r->outputs[i];
		json_t *o = json_object();
		if (o == NULL || jf_set(o, "path", jf_string_or_null(f->path)) < 0 ||
		    jf_set(o, "size", json_integer((json_int_t)f->size)) < 0 ||
		    jf_set(o, "sha256",
			   jf_string_or_null(f->sha256[0] ? f->sha256 : NULL)) <
			    0 ||
		    jf_set(o, "artifact", jf_string_or_null(f->artifact)) < 0 ||
		    (f->refused_reason != NULL &&
		     jf_set(o, "refused", json_string(f->refused_reason)) < 0)) {
			json_decref(o);
			json_decref(arr);
			return NULL;
		}
		if (json_array_append_new(arr, o) < 0) { /* releases o */
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *inbox_acked_json(const al_result *r)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr != NULL && i < r->n_inbox_acked; i++)
		if (json_array_append_new(arr, json_string(r->inbox_acked[i])) <
		    0) {
			json_decref(arr);
			return NULL;
		}
	return arr;
}

bool al_inbox_id_valid(const char *s)
{
	return al_token_valid(s, AL_MAX_INBOX_ID_BYTES);
}

static json_t *optional_int(bool has, int v)
{
	return has ? json_integer(v) : json_null();
}

char *al_result_to_json(const al_result *r, int pretty)
{
	char *text = NULL;
	json_t *o = json_object();
	if (o == NULL)
		return NULL;
	if (jf_set(o, "run_id", json_string(r->run_id)) < 0 ||
	    jf_set(o, "outcome", jf_string_or_null(al_outcome_name(r->outcome))) <
		    0 ||
	    jf_set(o, "reason", jf_string_or_null(r->reason)) < 0 ||
	    jf_set(o, "exit_code", optional_int(r->has_exit_code, r->exit_code)) <
		    0 ||
	    jf_set(o, "signal", optional_int(r->has_signal, r->signal)) < 0)
		goto out;
	for (int s = 0; s < 2; s++)
		if (jf_set_bytes(o, stream_key[s], stream_b64_key[s],
				 &r->output[s]) < 0)
			goto out;
	for (int s = 0; s < 2; s++)
		if (jf_set(o, truncated_key[s], json_boolean(r->truncated[s])) < 0)
			goto out;
	for (int s = 0; s < 2; s++)
		if (jf_set(o, bytes_key[s],
			   json_integer((json_int_t)r->output_seen[s])) < 0)
			goto out;
	if (jf_set(o, "usage", usage_json(&r->usage)) < 0 ||
	    jf_set(o, "provider", provider_json(r->provider)) < 0 ||
	    jf_set(o, "outputs", outputs_json(r)) < 0 ||
	    jf_set(o, "started_at", time_json(r->started_at_ms)) < 0 ||
	    jf_set(o, "finished_at", time_json(r->finished_at_ms)) < 0 ||
	    jf_set(o, "permanent", json_boolean(r->permanent)) < 0)
		goto out;
	/* Only runs whose program acknowledged inbox events carry it. */
	if (r->n_inbox_acked > 0 &&
	    jf_set(o, "inbox_acked", inbox_acked_json(r)) < 0)
		goto out;
	if (al_toolbelt_result_emit(o, r) < 0 ||
	    al_result_emit_fields(o, r) < 0 ||
	    /* only runs with a build step or judged cases */
	    al_build_result_emit(o, r) < 0)
		goto out;
	text = jf_dump(o, (pretty ? JSON_INDENT(2) : JSON_COMPACT) |
				  JSON_PRESERVE_ORDER);
out:
	json_decref(o);
	return text;
}

/* ---- from JSON ----------------------------------------------------- */

static int oom(const jf_ctx *c, const char *path)
{
	return al_error_set(c->err, AL_ERR_INTERNAL, ENOMEM, path,
			    "out of memory");
}

/* "YYYY-MM-DDTHH:MM:SS.mmmZ" exactly, as al_format_time_ms writes it. */
static int parse_time(const jf_ctx *c, const json_t *v, const char *path,
		      int64_t *out)
{
	const char *s;
	size_t n;
	*out = 0;
	if (v == NULL || json_is_null(v))
		return 0;
	int rc = jf_string(c, v, path, 32, 0, &s, &n);
	if (rc < 0)
		return rc;
	static const char shape[] = "dddd-dd-ddTdd:dd:dd.dddZ";
	bool ok = n == sizeof(shape) - 1;
	for (size_t i = 0; ok && i < n; i++)
		ok = shape[i] == 'd' ? (s[i] >= '0' && s[i] <= '9')
				     : s[i] == shape[i];
	if (ok) {
		struct tm tm = {0};
		tm.tm_year = atoi(s) - 1900;
		tm.tm_mon = atoi(s + 5) - 1;
		tm.tm_mday = atoi(s + 8);
		tm.tm_hour = atoi(s + 11);
		tm.tm_min = atoi(s + 14);
		tm.tm_sec = atoi(s + 17);
		time_t secs = timegm(&tm);
		int64_t ms = (int64_t)secs * 1000 + atoi(s + 20);
		/* Formatting back must give the same text: this refuses
		 * day 31 of a 30-day month, hour 24 and the like. */
		char back[40];
		al_format_time_ms(ms, back, sizeof(back));
		ok = ms > 0 && strcmp(back, s) == 0;
		*out = ms;
	}
	if (!ok) {
		*out = 0;
		return jf_fail(c, path,
			       "must be an RFC 3339 UTC time with milliseconds");
	}
	return 0;
}

static int opt_string(const jf_ctx *c, const json_t *v, const char *path,
		      size_t max, char **out)
{
	const char *s;
	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	int rc = jf_string(c, v, path, max, JF_NONEMPTY, &s, NULL);
	if (rc < 0)
		return rc;
	*out = strdup(s);
	return *out != NULL ? 0 : oom(c, path);
}

static const char *const usage_keys[] = {"wall_ms", "cpu_user_ms",
					 "cpu_sys_ms", "peak_memory_bytes",
					 NULL};

static int parse_usage(const jf_ctx *c, const json_t *v, al_usage *u)
{
	uint64_t *slots[] = {&u->wall_ms, &u->cpu_user_ms, &u->cpu_sys_ms,
			     &u->peak_memory_bytes};
	int rc;
	if (!json_is_object(v))
		return jf_fail(c, "usage", "must be an object");
	if ((rc = jf_only_keys(c, v, "usage", usage_keys)) < 0)
		return rc;
	for (size_t i = 0; usage_keys[i] != NULL; i++) {
		const json_t *n = json_object_get(v, usage_keys[i]);
		char p[64];
		snprintf(p, sizeof(p), "usage.%s", usage_keys[i]);
		if (n != NULL &&
		    (rc = jf_uint(c, n, p, 0, INT64_MAX, slots[i])) < 0)
			return rc;
	}
	return 0;
}

static const char *const provider_keys[] = {"id", "safety_class",
					    "isolation", NULL};

static int parse_provider(const jf_ctx *c, const json_t *v, al_result *r)
{
	const char *id;
	al_safety_class cls;
	int rc;
	if (json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return jf_fail(c, "provider", "must be an object or null");
	if ((rc = jf_only_keys(c, v, "provider", provider_keys)) < 0)
		return rc;
	const json_t *idv = json_object_get(v, "id");
	if (idv == NULL)
		return jf_fail(c, "provider.id", "is required");
	if ((rc = jf_string(c, idv, "provider.id", 64, JF_NONEMPTY, &id,
			    NULL)) < 0)
		return rc;
	const json_t *cv = json_object_get(v, "safety_class");
	if (cv == NULL)
		return jf_fail(c, "provider.safety_class", "is required");
	if ((rc = al_safety_from_json(c, cv, "provider.safety_class", &cls)) <
	    0)
		return rc;
	al_isolation_axes axes = {0};
	const json_t *iv = json_object_get(v, "isolation");
	if (iv != NULL &&
	    (rc = al_isolation_from_json(c, iv, "provider.isolation", &axes)) <
		    0)
		return rc;
	r->provider = al_facts_new(id, cls);
	if (r->provider == NULL)
		return oom(c, "provider");
	/* It ran the request, so it was available. */
	r->provider->available = true;
	r->provider->isolation = axes;
	return 0;
}

static const char *const output_keys[] = {"path", "size", "sha256",
					  "artifact", "refused", NULL};

static int parse_output(const jf_ctx *c, const json_t *o, size_t i,
			al_output_file *f)
{
	char p[64], pp[64], ps[64], ph[64], pa[64], pr[64];
	snprintf(p, sizeof(p), "outputs[%zu]", i);
	snprintf(pp, sizeof(pp), "outputs[%zu].path", i);
	snprintf(ps, sizeof(ps), "outputs[%zu].size", i);
	snprintf(ph, sizeof(ph), "outputs[%zu].sha256", i);
	snprintf(pa, sizeof(pa), "outputs[%zu].artifact", i);
	snprintf(pr, sizeof(pr), "outputs[%zu].refused", i);
	int rc;
	if (!json_is_object(o))
		return jf_fail(c, p, "must be an object");
	if ((rc = jf_only_keys(c, o, p, output_keys)) < 0)
		return rc;
	const json_t *v = json_object_get(o, "path");
	if (v == NULL)
		return jf_fail(c, pp, "is required");
	if (json_is_null(v))
		return jf_fail(c, pp, "must be a string");
	if ((rc = opt_string(c, v, pp, AL_MAX_FILE_PATH_BYTES, &f->path)) < 0)
		return rc;
	if ((v = json_object_get(o, "size")) != NULL &&
	    (rc = jf_uint(c, v, ps, 0, INT64_MAX, &f->size)) < 0)
		return rc;
	v = json_object_get(o, "sha256");
	if (v != NULL && !json_is_null(v)) {
		const char *s;
		size_t n;
		if ((rc = jf_string(c, v, ph, 64, 0, &s, &n)) < 0)
			return rc;
		bool hex = n == 64;
		for (size_t k = 0; hex && k < n; k++)
			hex = (s[k] >= '0' && s[k] <= '9') ||
			      (s[k] >= 'a' && s[k] <= 'f');
		if (!hex)
			return jf_fail(c, ph, "must be 64 lower-case hex digits");
		memcpy(f->sha256, s, 65);
	}
	if ((rc = opt_string(c, json_object_get(o, "artifact"), pa,
			     MAX_RESULT_TEXT, &f->artifact)) < 0)
		return rc;
	return opt_string(c, json_object_get(o, "refused"), pr,
			  MAX_RESULT_TEXT, &f->refused_reason);
}

static int parse_outputs(const jf_ctx *c, const json_t *v, al_result *r)
{
	if (!json_is_array(v))
		return jf_fail(c, "outputs", "must be an array");
	size_t n = json_array_size(v);
	if (n > MAX_RESULT_OUTPUTS)
		return jf_fail(c, "outputs", "has more than %u items",
			       MAX_RESULT_OUTPUTS);
	if (n == 0)
		return 0;
	r->outputs = calloc(n, sizeof(*r->outputs));
	if (r->outputs == NULL)
		return oom(c, "outputs");
	r->n_outputs = n;
	for (size_t i = 0; i < n; i++) {
		int rc = parse_output(c, json_array_get(v, i), i, &r->outputs[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int parse_head(const jf_ctx *c, const json_t *root, al_result *r)
{
	const char *s;
	size_t n;
	int rc;
	const json_t *v = json_object_get(root, "run_id");
	if (v == NULL)
		return jf_fail(c, "run_id", "is required");
	if ((rc = jf_string(c, v, "run_id", sizeof(r->run_id) - 1, JF_NONEMPTY,
			    &s, &n)) < 0)
		return rc;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] > 0x7e)
			return jf_fail(c, "run_id",
				       "must be printable ASCII without spaces");
	memcpy(r->run_id, s, n + 1);

	if ((v = json_object_get(root, "outcome")) == NULL)
		return jf_fail(c, "outcome", "is required");
	if ((rc = jf_string(c, v, "outcome", 32, 0, &s, NULL)) < 0)
		return rc;
	al_outcome outcome;
	if (al_outcome_from_name(s, &outcome) < 0)
		return jf_fail(c, "outcome", "is not a known outcome");
	v = json_object_get(root, "reason");
	const char *reason = NULL;
	if (v != NULL && !json_is_null(v)) {
		if ((rc = jf_string(c, v, "reason", MAX_REASON_BYTES,
				    JF_NONEMPTY, &reason, &n)) < 0)
			return rc;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)reason[i] < 0x20 ||
			    (unsigned char)reason[i] > 0x7e)
				return jf_fail(c, "reason",
					       "must be printable ASCII");
	}
	if (al_result_set_outcome(r, outcome, reason) < 0)
		return oom(c, "reason");

	int64_t num;
	v = json_object_get(root, "exit_code");
	if (v != NULL && !json_is_null(v)) {
		if ((rc = jf_int(c, v, "exit_code", 0, 255, &num)) < 0)
			return rc;
		r->has_exit_code = true;
		r->exit_code = (int)num;
	}
	v = json_object_get(root, "signal");
	if (v != NULL && !json_is_null(v)) {
		if ((rc = jf_int(c, v, "signal", 1, 127, &num)) < 0)
			return rc;
		r->has_signal = true;
		r->signal = (int)num;
	}
	return 0;
}

static int parse_streams(const jf_ctx *c, const json_t *root, al_result *r)
{
	for (int s = 0; s < 2; s++) {
		bool present;
		int rc;
		if ((rc = jf_bytes(c, root, stream_key[s], stream_b64_key[s],
				   stream_key[s], stream_b64_key[s],
				   MAX_STREAM_BYTES, &r->output[s],
				   &present)) < 0)
			return rc;
		const json_t *v = json_object_get(root, truncated_key[s]);
		if (v != NULL &&
		    (rc = jf_bool(c, v, truncated_key[s], &r->truncated[s])) < 0)
			return rc;
		v = json_object_get(root, bytes_key[s]);
		if (v != NULL && (rc = jf_uint(c, v, bytes_key[s], 0, INT64_MAX,
					       &r->output_seen[s])) < 0)
			return rc;
	}
	return 0;
}

static const char *const result_keys[] = {
	"run_id",	    "outcome",	      "reason",		"exit_code",
	"signal",	    "stdout",	      "stdout_b64",	"stderr",
	"stderr_b64",	    "stdout_truncated", "stderr_truncated", "stdout_bytes",
	"stderr_bytes",	    "usage",	      "provider",	"outputs",
	"started_at",	    "finished_at",    "permanent",	"inbox_acked",
	"events",	    "declaration",    "host_calls",	AL_RESULT_FIELD_KEYS,
	"build",	    "tests",	      NULL};

static int parse_inbox_acked(const jf_ctx *c, const json_t *v, al_result *r)
{
	if (!json_is_array(v))
		return jf_fail(c, "inbox_acked", "must be an array");
	size_t n = json_array_size(v);
	if (n > AL_MAX_INBOX_EVENTS)
		return jf_fail(c, "inbox_acked", "has more than %u items",
			       AL_MAX_INBOX_EVENTS);
	if (n == 0)
		return 0;
	r->inbox_acked = calloc(n, sizeof(*r->inbox_acked));
	if (r->inbox_acked == NULL)
		return oom(c, "inbox_acked");
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(v, i);
		char p[32];
		snprintf(p, sizeof(p), "inbox_acked[%zu]", i);
		if (!json_is_string(e) ||
		    strlen(json_string_value(e)) != json_string_length(e) ||
		    !al_inbox_id_valid(json_string_value(e)))
			return jf_fail(c, p, "must be an inbox event id");
		if ((r->inbox_acked[i] = strdup(json_string_value(e))) == NULL)
			return oom(c, p);
		r->n_inbox_acked = i + 1;
	}
	return 0;
}

static int parse_result(const jf_ctx *c, const json_t *root, al_result *r)
{
	int rc;
	const json_t *v;
	if ((rc = jf_only_keys(c, root, "result", result_keys)) < 0 ||
	    (rc = parse_head(c, root, r)) < 0 ||
	    (rc = parse_streams(c, root, r)) < 0)
		return rc;
	if ((v = json_object_get(root, "usage")) != NULL &&
	    (rc = parse_usage(c, v, &r->usage)) < 0)
		return rc;
	if ((v = json_object_get(root, "provider")) != NULL &&
	    (rc = parse_provider(c, v, r)) < 0)
		return rc;
	if ((v = json_object_get(root, "outputs")) != NULL &&
	    (rc = parse_outputs(c, v, r)) < 0)
		return rc;
	if ((rc = parse_time(c, json_object_get(root, "started_at"),
			     "started_at", &r->started_at_ms)) < 0 ||
	    (rc = parse_time(c, json_object_get(root, "finished_at"),
			     "finished_at", &r->finished_at_ms)) < 0)
		return rc;
	/* Explicit "permanent" wins over what the outcome implies. */
	if ((v = json_object_get(root, "permanent")) != NULL &&
	    (rc = jf_bool(c, v, "permanent", &r->permanent)) < 0)
		return rc;
	if ((v = json_object_get(root, "inbox_acked")) != NULL &&
	    (rc = parse_inbox_acked(c, v, r)) < 0)
		return rc;
	if ((rc = al_toolbelt_result_parse(c, root, r)) < 0)
		return rc;
	if ((rc = al_result_parse_fields(c, root, r)) < 0)
		return rc;
	return al_build_result_parse(c, root, r);
}

int al_result_from_json(const char *json, size_t len, al_result **out,
			al_error **err)
{
	const jf_ctx c = {err, AL_ERR_INVALID_ARGUMENT};
	json_t *root = NULL;
	al_result *r = NULL;
	*out = NULL;
	int rc = jf_load(&c, json, len, SIZE_MAX, &root);
	if (rc < 0)
		return rc;
	r = al_result_new();
	if (r == NULL) {
		rc = oom(&c, "result");
		goto out;
	}
	if ((rc = parse_result(&c, root, r)) < 0)
		goto out;
	*out = r;
	r = NULL;
out:
	al_result_free(r);
	json_decref(root);
	return al_error_wrap(err, rc, NULL);
}
