/* Judge0 CE v1.13 (docs/compat.md): submissions (single and batched),
 * languages, statuses and the informational endpoints, answered from
 * airlock runs.  A token is the run's id, so a submission is also a run
 * in /v1/runs and the audit trail.  The mapping from airlock's outcomes
 * to Judge0's statuses is the table in j0_status(). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <airlock/json.h>

#include "core/log.h"
#include "json/base64.h"
#include "server/compat.h"
#include "server/compat_names.h"

/* The Judge0 API version this layer speaks. */
#define J0_VERSION "1.13.1"
#define MAX_BATCH 20u

static const char *const statuses[] = {
	NULL,
	"In Queue",
	"Processing",
	"Accepted",
	"Wrong Answer",
	"Time Limit Exceeded",
	"Compilation Error",
	"Runtime Error (SIGSEGV)",
	"Runtime Error (SIGXFSZ)",
	"Runtime Error (SIGFPE)",
	"Runtime Error (SIGABRT)",
	"Runtime Error (NZEC)",
	"Runtime Error (Other)",
	"Internal Error",
	"Exec Format Error",
};
#define N_STATUSES 15

/* Judge0's defaults and maxima (its config_info), in its units:
 * seconds, kilobytes, counts. */
typedef struct j0_limit {
	const char *name;
	double dflt, max;
} j0_limit;
static const j0_limit j0_limits[] = {
	{"cpu_time_limit", 5, 15},
	{"cpu_extra_time", 1, 5},
	{"wall_time_limit", 10, 20},
	{"memory_limit", 128000, 512000},
	{"stack_limit", 64000, 128000},
	{"max_processes_and_or_threads", 60, 120},
	{"max_file_size", 1024, 4096},
	{"number_of_runs", 1, 20},
};
#define N_LIMITS (sizeof(j0_limits) / sizeof(j0_limits[0]))

static const char *const default_fields =
	"stdout,time,memory,stderr,token,compile_output,message,status";

static enum MHD_Result j0_error(const al_compat_req *q, unsigned status,
				const char *msg)
{
	return al_compat_send(q, status, json_pack("{s:s}", "error", msg),
			      NULL, NULL);
}

static const char *qarg(const al_compat_req *q, const char *name)
{
	return MHD_lookup_connection_value(q->conn, MHD_GET_ARGUMENT_KIND,
					   name);
}

/* Rails' boolean cast, as Judge0 reads its query. */
static bool qbool(const al_compat_req *q, const char *name)
{
	const char *v = qarg(q, name);
	static const char *const yes[] = {"true", "1", "t", "on", "yes", "y"};
	for (size_t i = 0; v != NULL && i < sizeof(yes) / sizeof(yes[0]); i++)
		if (strcasecmp(v, yes[i]) == 0)
			return true;
	return false;
}

static void iso_now(char out[32])
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, 32 - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

/* Base64 as Judge0 clients send it: line breaks and missing padding are
 * accepted (Ruby's and some JavaScript encoders add or drop them). */
static int b64_lenient(const char *s, size_t n, unsigned char **out,
		       size_t *len)
{
	char *buf = malloc(n + 4);
	size_t w = 0;
	if (buf == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (s[i] != '\n' && s[i] != '\r' && s[i] != ' ' &&
		    s[i] != '\t')
			buf[w++] = s[i];
	while (w % 4 != 0)
		buf[w++] = '=';
	int rc = al_base64_decode(buf, w, out, len);
	free(buf);
	return rc;
}

/* A text field of a submission as base64 (what the store keeps), from
 * the request's text or base64.  NULL value: absent.  -EINVAL: not
 * decodable. */
static int text_field(json_t *sub, const char *name, bool b64, char **out)
{
	json_t *v = json_object_get(sub, name);
	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -EINVAL;
	if (!b64) {
		*out = al_base64_encode(json_string_value(v),
					json_string_length(v));
		return *out ? 0 : -ENOMEM;
	}
	unsigned char *bytes = NULL;
	size_t n = 0;
	int rc = b64_lenient(json_string_value(v), json_string_length(v),
			     &bytes, &n);
	if (rc < 0)
		return rc;
	*out = al_base64_encode(bytes, n);
	free(bytes);
	return *out ? 0 : -ENOMEM;
}

/* Judge0's Plain Text (43): the source is the output. */
#define PLAIN_TEXT 43

/* "Python (3.11.2)", "JavaScript (Node.js 20.1.0)". */
static json_t *lang_name(const al_compat_lang *l, const char *version)
{
	char buf[128];
	if (l->judge0_name[strlen(l->judge0_name) - 1] != ')' &&
	    strchr(l->judge0_name, '(') != NULL)
		snprintf(buf, sizeof(buf), "%s %s)", l->judge0_name, version);
	else
		snprintf(buf, sizeof(buf), "%s (%s)", l->judge0_name, version);
	return json_string(buf);
}

/* The Judge0 languages airlock runs here: [{id, name, lang, version}]. */
static json_t *j0_languages(const al_compat_req *q)
{
	json_t *langs = al_compat_languages(q->svc, q->tenant);
	if (langs == NULL)
		return NULL;
	json_t *arr = json_array();
	const al_compat_lang *l;
	for (size_t i = 0; (l = al_compat_lang_at(i)) != NULL; i++) {
		const char *v = al_compat_observed(langs, l->airlock);
		if (l->judge0_id == 0 || v == NULL)
			continue;
		json_array_append_new(
			arr, json_pack("{s:i, s:o, s:s, s:s, s:s, s:b}", "id",
				       l->judge0_id, "name", lang_name(l, v),
				       "airlock", l->airlock, "version", v,
				       "file", l->judge0_file, "compiled",
				       l->compiled));
	}
	if (al_compat_observed(langs, "sh") != NULL || al_compat_observed(langs, "bash") != NULL)
		json_array_append_new(
			arr, json_pack("{s:i, s:s, s:s, s:s, s:s}", "id",
				       PLAIN_TEXT, "name", "Plain Text",
				       "airlock",
				       al_compat_observed(langs, "sh") ? "sh" : "bash",
				       "version", "", "file", "text.txt"));
	json_decref(langs);
	return arr;
}

static json_t *find_lang(json_t *langs, json_int_t id)
{
	size_t i;
	json_t *l;
	json_array_foreach(langs, i, l) {
		if (json_integer_value(json_object_get(l, "id")) == id)
			return l;
	}
	return NULL;
}

/* A validation error in Judge0's shape: {"field": ["message"]}. */
static void add_err(json_t *errs, const char *field, const char *msg)
{
	json_t *a = json_object_get(errs, field);
	if (a == NULL) {
		a = json_array();
		json_object_set_new(errs, field, a);
	}
	json_array_append_new(a, json_string(msg));
}

/* Splits command_line_arguments like a shell would for plain words and
 * quotes ('…', "…"); no expansion. */
static json_t *split_args(const char *s)
{
	json_t *argv = json_array();
	size_t n = strlen(s);
	char *word = malloc(n + 1);
	if (word == NULL || argv == NULL) {
		free(word);
		json_decref(argv);
		return NULL;
	}
	size_t w = 0;
	bool in_word = false;
	char quote = 0;
	for (size_t i = 0; i <= n; i++) {
		char c = s[i];
		if (quote != 0 && c != '\0') {
			if (c == quote)
				quote = 0;
			else
				word[w++] = c;
			continue;
		}
		if (c == '\'' || c == '"') {
			quote = c;
			in_word = true;
		} else if (c == ' ' || c == '\t' || c == '\n' || c == '\0') {
			if (in_word)
				json_array_append_new(argv,
						      json_stringn(word, w));
			w = 0;
			in_word = false;
		} else {
			word[w++] = c;
			in_word = true;
		}
	}
	free(word);
	return argv;
}

/* The limits of a submission in Judge0's units: given, else its
 * default; a value past Judge0's maximum is a validation error. */
static void limits_of(json_t *in, json_t *stored, json_t *errs)
{
	for (size_t i = 0; i < N_LIMITS; i++) {
		const j0_limit *l = &j0_limits[i];
		json_t *v = json_object_get(in, l->name);
		double d = l->dflt;
		if (v != NULL && !json_is_null(v)) {
			if (!json_is_number(v)) {
				add_err(errs, l->name, "is not a number");
				continue;
			}
			d = json_number_value(v);
			char msg[64];
			if (d < 0) {
				add_err(errs, l->name,
					"must be greater than or equal to 0");
				continue;
			}
			if (d > l->max) {
				snprintf(msg, sizeof(msg),
					 "must be less than or equal to %g",
					 l->max);
				add_err(errs, l->name, msg);
				continue;
			}
		}
		if (v != NULL && !json_is_null(v) &&
		    strcmp(l->name, "stack_limit") == 0)
			json_object_set_new(stored, "_stack_given",
					    json_true());
		/* Judge0's seconds are floats, its sizes and counts
		 * integers. */
		json_object_set_new(stored, l->name,
				    i < 3
					    ? json_real(d)
					    : json_integer((json_int_t)d));
	}
}

static double stored_num(json_t *stored, const char *name)
{
	return json_number_value(json_object_get(stored, name));
}

/* The /v1 request of a stored submission. */
static json_t *v1_request(json_t *stored, json_t *lang)
{
	const char *airlock = json_string_value(json_object_get(lang, "airlock"));
	bool plain = json_integer_value(json_object_get(lang, "id")) ==
		     PLAIN_TEXT;
	const char *src = json_string_value(json_object_get(stored,
							    "source_code"));
	unsigned char *code = NULL;
	size_t n = 0;
	json_t *req = json_pack("{s:s}", "language", airlock);
	if (req == NULL || al_base64_decode(src, strlen(src), &code, &n) < 0) {
		json_decref(req);
		return NULL;
	}
	json_t *files = json_object_get(stored, "_files");
	if (files != NULL || plain) {
		json_t *all = files ? json_deep_copy(files) : json_array();
		json_object_set_new(req, "files", all);
		json_object_set_new(req, "grant",
				    json_pack("{s:s}", "workspace", "ro"));
	}
	if (plain) {
		json_object_set_new(req, "code",
				    json_string("cat text.txt"));
		json_array_append_new(json_object_get(req, "files"),
				      json_pack("{s:s, s:s}", "path", "text.txt",
						"content_b64", src));
	} else {
		json_t *c = memchr(code, 0, n) == NULL
				    ? json_stringn((char *)code, n)
				    : NULL;
		if (c == NULL) {
			free(code);
			json_decref(req);
			return NULL;
		}
		json_object_set_new(req, "code", c);
	}
	free(code);
	const char *opts = json_string_value(
		json_object_get(stored, "compiler_options"));
	if (opts != NULL)
		json_object_set_new(req, "build_flags", split_args(opts));
	const char *in = json_string_value(json_object_get(stored, "stdin"));
	if (in != NULL)
		json_object_set_new(req, "stdin_b64", json_string(in));
	const char *args = json_string_value(
		json_object_get(stored, "command_line_arguments"));
	if (args != NULL && args[0] != '\0')
		json_object_set_new(req, "argv", split_args(args));
	double cpu = stored_num(stored, "cpu_time_limit") +
		     stored_num(stored, "cpu_extra_time");
	json_t *limits = json_pack(
		"{s:I, s:I, s:I, s:I, s:I}", "cpu_ms",
		(json_int_t)(cpu * 1000 < 1 ? 1 : cpu * 1000), "wall_ms",
		(json_int_t)(stored_num(stored, "wall_time_limit") * 1000 < 1
				     ? 1
				     : stored_num(stored, "wall_time_limit") *
					       1000),
		"memory_bytes",
		(json_int_t)(stored_num(stored, "memory_limit") < 1
				     ? 1024
				     : stored_num(stored, "memory_limit") *
					       1024),
		"pids",
		(json_int_t)(stored_num(stored,
					"max_processes_and_or_threads") < 1
				     ? 1
				     : stored_num(stored,
						  "max_processes_and_or_threads")),
		"file_bytes",
		(json_int_t)(stored_num(stored, "max_file_size") < 1
				     ? 1024
				     : stored_num(stored, "max_file_size") *
					       1024));
	/* The stack only when asked for: a provider that cannot bound it
	 * (container, remote) still takes the submissions that do not. */
	if (json_is_true(json_object_get(stored, "_stack_given")))
		json_object_set_new(
			limits, "stack_bytes",
			json_integer((json_int_t)(stored_num(stored,
							     "stack_limit") < 1
							  ? 1024
							  : stored_num(stored,
								       "stack_limit") *
								    1024)));
	json_object_set_new(req, "limits", limits);
	if (json_is_true(json_object_get(stored, "enable_network"))) {
		json_t *g = json_object_get(req, "grant");
		if (g == NULL) {
			g = json_object();
			json_object_set_new(req, "grant", g);
		}
		json_object_set_new(g, "network", json_string("host"));
	}
	return req;
}

/* A submission's own fields, checked (errs filled on failure). */
static json_t *parse_submission(json_t *in, bool b64, json_t *langs,
				json_t *errs, json_t **lang_out)
{
	json_t *stored = json_object();
	*lang_out = NULL;
	if (!json_is_object(in)) {
		add_err(errs, "submission", "must be an object");
		return stored;
	}
	static const char *const texts[] = {"source_code", "stdin",
					    "expected_output"};
	for (size_t i = 0; i < 3; i++) {
		char *v = NULL;
		int rc = text_field(in, texts[i], b64, &v);
		if (rc == -EINVAL)
			add_err(errs, texts[i],
				b64 ? "is not valid base64"
				    : "must be a string");
		if (v != NULL)
			json_object_set_new(stored, texts[i], json_string(v));
		free(v);
	}
	if (json_object_get(stored, "source_code") == NULL &&
	    json_object_get(errs, "source_code") == NULL)
		add_err(errs, "source_code", "can't be blank");
	json_t *lid = json_object_get(in, "language_id"), *num = NULL;
	/* Rails casts "71" to 71; Judge0's own examples send it so. */
	if (json_is_string(lid)) {
		char *end;
		long long v = strtoll(json_string_value(lid), &end, 10);
		if (*end == '\0' && end != json_string_value(lid))
			lid = num = json_integer(v);
	}
	if (lid == NULL || json_is_null(lid)) {
		add_err(errs, "language_id", "can't be blank");
	} else if (!json_is_integer(lid) ||
		   (*lang_out = find_lang(langs, json_integer_value(lid))) ==
			   NULL) {
		char msg[96];
		snprintf(msg, sizeof(msg),
			 "language with id %lld doesn't exist",
			 json_is_integer(lid)
				 ? (long long)json_integer_value(lid)
				 : -1LL);
		add_err(errs, "language_id", msg);
	} else {
		json_object_set_new(stored, "language_id",
				    json_integer(json_integer_value(lid)));
	}
	json_decref(num);
	json_t *v = json_object_get(in, "command_line_arguments");
	if (json_is_string(v))
		json_object_set(stored, "command_line_arguments", v);
	else if (v != NULL && !json_is_null(v))
		add_err(errs, "command_line_arguments", "must be a string");
	v = json_object_get(in, "compiler_options");
	if (v != NULL && !json_is_null(v) &&
	    !(json_is_string(v) && json_string_length(v) == 0)) {
		if (!json_is_string(v))
			add_err(errs, "compiler_options", "must be a string");
		else if (*lang_out != NULL &&
			 !json_is_true(json_object_get(*lang_out, "compiled")))
			add_err(errs, "compiler_options",
				"setting compiler options is only allowed "
				"for compiled languages");
		else
			json_object_set(stored, "compiler_options", v);
	}
	static const char *const flags[] = {
		"redirect_stderr_to_stdout", "enable_network",
		"enable_per_process_and_thread_time_limit",
		"enable_per_process_and_thread_memory_limit"};
	for (size_t i = 0; i < 4; i++) {
		v = json_object_get(in, flags[i]);
		if (v == NULL || json_is_null(v))
			json_object_set_new(stored, flags[i], json_false());
		else if (json_is_boolean(v))
			json_object_set(stored, flags[i], v);
		else
			add_err(errs, flags[i], "must be a boolean");
	}
	v = json_object_get(in, "additional_files");
	if (v != NULL && !json_is_null(v)) {
		/* Always base64, whatever base64_encoded says. */
		unsigned char *zip = NULL;
		size_t zl = 0;
		json_t *files = NULL;
		const char *why = "must be a base64 encoded zip archive";
		if (!json_is_string(v) ||
		    b64_lenient(json_string_value(v), json_string_length(v),
				&zip, &zl) < 0 ||
		    al_compat_unzip(zip, zl, &files, &why) < 0) {
			char msg[128];
			snprintf(msg, sizeof(msg), "%s", why);
			add_err(errs, "additional_files", msg);
		} else {
			json_object_set(stored, "additional_files", v);
			json_object_set_new(stored, "_files", files);
		}
		free(zip);
	}
	v = json_object_get(in, "callback_url");
	if (json_is_string(v))
		json_object_set(stored, "callback_url", v);
	else if (v != NULL && !json_is_null(v))
		add_err(errs, "callback_url", "must be a string");
	limits_of(in, stored, errs);
	char now[32];
	iso_now(now);
	json_object_set_new(stored, "created_at", json_string(now));
	return stored;
}

/* ---- answers ------------------------------------------------------- */

/* compiler_options the provider refused (a flag outside the language's
 * allow-list): Judge0's compiler would have failed, so it is a
 * Compilation Error, whether or not the caller waited. */
static bool refused_flags(const json_t *r)
{
	const char *rs = json_string_value(json_object_get(r, "reason"));
	return rs != NULL && strcmp(rs, "build_flags") == 0;
}

#define FLAGS_REFUSED                                                      \
	"compiler_options: a flag outside the language's allow-list (only " \
	"flags that change code generation or diagnostics are accepted)\n"


typedef struct j0_view {
	int status;
	const char *message;
	char msg[96];
} j0_view;

/* The one table from airlock's outcomes to Judge0's statuses
 * (docs/compat.md, "Statuses"). */
static void j0_status(const json_t *r, json_t *stored, const unsigned char *out,
		      size_t out_len, j0_view *v)
{
	const char *oc = json_string_value(json_object_get(r, "outcome"));
	const char *rs = json_string_value(json_object_get(r, "reason"));
	const json_t *sig = json_object_get(r, "signal");
	int s = json_is_integer(sig) ? (int)json_integer_value(sig) : 0;
	json_t *usage = json_object_get(r, "usage");
	double cpu =
		(double)(json_integer_value(json_object_get(usage, "cpu_user_ms")) +
			 json_integer_value(json_object_get(usage, "cpu_sys_ms"))) /
		1000.0;
	v->message = NULL;
	v->msg[0] = '\0';
	if (oc == NULL) {
		v->status = 13;
	} else if (rs != NULL && (strcmp(rs, "build_failed") == 0 ||
				  strcmp(rs, "build_flags") == 0)) {
		v->status = 6;
	} else if (rs != NULL && strcmp(rs, "exec_format") == 0) {
		/* The kernel refused the program (ENOEXEC). */
		v->status = 14;
		v->message = "Exec format error";
	} else if (strcmp(oc, "completed") == 0) {
		v->status = 3;
		const char *exp = json_string_value(
			json_object_get(stored, "expected_output"));
		if (exp != NULL) {
			unsigned char *e = NULL;
			size_t el = 0;
			if (al_base64_decode(exp, strlen(exp), &e, &el) == 0) {
				/* Judge0 compares with trailing white space
				 * of each line and of the whole ignored. */
				size_t a = out_len, b = el;
				while (a > 0 && strchr(" \t\r\n", out[a - 1]))
					a--;
				while (b > 0 && strchr(" \t\r\n", e[b - 1]))
					b--;
				if (a != b || memcmp(out, e, a) != 0)
					v->status = 4;
			}
			free(e);
		}
		if (v->status == 3 &&
		    cpu > stored_num(stored, "cpu_time_limit") &&
		    json_object_get(stored, "cpu_time_limit") != NULL)
			v->status = 5;
	} else if (strcmp(oc, "timed_out") == 0 ||
		   (rs != NULL && strcmp(rs, "cpu_limit") == 0)) {
		v->status = 5;
		v->message = strcmp(oc, "timed_out") == 0
				     ? "Time limit exceeded (wall clock)"
				     : "Time limit exceeded";
	} else if (strcmp(oc, "failed") == 0) {
		v->status = 11;
		snprintf(v->msg, sizeof(v->msg), "Exited with error status %lld",
			 (long long)json_integer_value(
				 json_object_get(r, "exit_code")));
	} else if (strcmp(oc, "killed") == 0 ||
		   strcmp(oc, "interrupted") == 0 ||
		   strcmp(oc, "cancelled") == 0) {
		v->status = s == 11 ? 7
			    : s == 25 || (rs && strcmp(rs, "file_size_limit") == 0)
				    ? 8
			    : s == 8 ? 9
			    : s == 6 ? 10
				     : 12;
		if (s > 0)
			snprintf(v->msg, sizeof(v->msg),
				 "Exited with signal %d%s%s", s,
				 rs && strcmp(rs, "signal") != 0 ? ": " : "",
				 rs && strcmp(rs, "signal") != 0 ? rs : "");
		else
			snprintf(v->msg, sizeof(v->msg), "%s", oc);
	} else {
		/* Refused or failed to start after the token was given. */
		v->status = 13;
		snprintf(v->msg, sizeof(v->msg), "%s%s%s", oc, rs ? ": " : "",
			 rs ? rs : "");
	}
	if (v->msg[0] != '\0')
		v->message = v->msg;
}

static bool field_wanted(const char *fields, const char *name)
{
	if (strcmp(fields, "*") == 0)
		return true;
	size_t n = strlen(name);
	for (const char *p = fields; *p != '\0';) {
		size_t k = strcspn(p, ",");
		if (k == n && strncmp(p, name, n) == 0)
			return true;
		p += k;
		if (*p == ',')
			p++;
	}
	return false;
}

/* Base64 as Judge0 sends it (Ruby's Base64.encode64): a line break
 * after every 60 characters and at the end. */
static json_t *ruby_base64(const unsigned char *p, size_t n)
{
	char *s = al_base64_encode(p, n);
	if (s == NULL)
		return json_null();
	size_t len = strlen(s);
	char *out = malloc(len + len / 60 + 2);
	size_t w = 0;
	if (out == NULL) {
		free(s);
		return json_null();
	}
	for (size_t i = 0; i < len; i += 60) {
		size_t k = len - i < 60 ? len - i : 60;
		memcpy(out + w, s + i, k);
		w += k;
		out[w++] = '\n';
	}
	json_t *j = json_stringn(out, w);
	free(out);
	free(s);
	return j;
}

/* A bytes field: null when empty (as Judge0), base64 or text; false when
 * the text is not UTF-8 and base64 was not asked for. */
static bool put_bytes(json_t *o, const char *name, const unsigned char *p,
		      size_t n, bool b64, bool null_if_empty)
{
	if (p == NULL || (n == 0 && null_if_empty)) {
		json_object_set_new(o, name, json_null());
		return true;
	}
	if (b64) {
		json_object_set_new(o, name, ruby_base64(p, n));
		return true;
	}
	if (!al_utf8_valid(p, n))
		return false;
	json_object_set_new(o, name, json_stringn((const char *)p, n));
	return true;
}

static bool put_stored_text(json_t *o, json_t *stored, const char *name,
			    bool b64)
{
	const char *s = json_string_value(json_object_get(stored, name));
	if (s == NULL) {
		json_object_set_new(o, name, json_null());
		return true;
	}
	unsigned char *p = NULL;
	size_t n = 0;
	if (al_base64_decode(s, strlen(s), &p, &n) < 0)
		return false;
	bool ok = put_bytes(o, name, p, n, b64, false);
	free(p);
	return ok;
}

static json_t *seconds(json_int_t ms)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%.3f", (double)ms / 1000.0);
	return json_string(buf);
}

/* The submission as Judge0 shows it: every field, then cut to fields.
 * NULL with *utf8 false when a wanted text is not UTF-8. */
static json_t *render(const char *token, json_t *stored, json_t *langs,
		      const al_compat_out *o, int running, const char *fields,
		      bool b64, bool *utf8, json_t *avg)
{
	json_t *all = json_object();
	*utf8 = true;
	json_object_set_new(all, "token", json_string(token));
	static const char *const texts[] = {"source_code", "stdin",
					    "expected_output"};
	for (size_t i = 0; i < 3; i++)
		if (field_wanted(fields, texts[i]) &&
		    !put_stored_text(all, stored, texts[i], b64))
			*utf8 = false;
	json_t *lid = json_object_get(stored, "language_id");
	json_object_set_new(all, "language_id",
			    lid ? json_incref(lid) : json_null());
	static const char *const copied[] = {
		"command_line_arguments", "redirect_stderr_to_stdout",
		"enable_network", "enable_per_process_and_thread_time_limit",
		"enable_per_process_and_thread_memory_limit", "created_at"};
	for (size_t i = 0; i < sizeof(copied) / sizeof(copied[0]); i++) {
		json_t *v = json_object_get(stored, copied[i]);
		json_object_set_new(all, copied[i],
				    v ? json_incref(v) : json_null());
	}
	for (size_t i = 0; i < N_LIMITS; i++) {
		json_t *v = json_object_get(stored, j0_limits[i].name);
		json_object_set_new(all, j0_limits[i].name,
				    v ? json_incref(v) : json_null());
	}
	json_t *co = json_object_get(stored, "compiler_options");
	json_object_set_new(all, "compiler_options",
			    co ? json_incref(co) : json_null());
	json_t *cu = json_object_get(stored, "callback_url");
	json_object_set_new(all, "callback_url",
			    cu ? json_incref(cu) : json_null());
	json_t *af = json_object_get(stored, "additional_files");
	json_object_set_new(all, "additional_files",
			    af ? json_incref(af) : json_null());
	json_t *lang = lid ? find_lang(langs, json_integer_value(lid)) : NULL;
	json_object_set_new(all, "language",
			    lang ? json_pack("{s:O, s:O}", "id",
					     json_object_get(lang, "id"),
					     "name",
					     json_object_get(lang, "name"))
				 : json_null());
	const json_t *r = o != NULL ? o->result : NULL;
	j0_view v = {.status = running ? running : 13};
	unsigned char *so = NULL, *se = NULL;
	size_t lo = 0, le = 0;
	if (r != NULL && (al_compat_stream(r, "stdout", &so, &lo) < 0 ||
			  al_compat_stream(r, "stderr", &se, &le) < 0)) {
		free(so);
		so = NULL;
		r = NULL;
	}
	bool redirect = json_is_true(
		json_object_get(stored, "redirect_stderr_to_stdout"));
	if (r != NULL && redirect) {
		/* One stream, in the order the bytes arrived. */
		unsigned char *both = malloc(lo + le + 1);
		if (both != NULL && o->output_whole) {
			memcpy(both, o->output, o->output_len);
		} else if (both != NULL) {
			memcpy(both, so, lo);
			memcpy(both + lo, se, le);
		}
		free(so);
		so = both;
		lo = both ? lo + le : 0;
		le = 0;
	}
	if (r != NULL)
		j0_status(r, stored, so ? so : (const unsigned char *)"", lo,
			  &v);
	if (!put_bytes(all, "stdout", r ? so : NULL, lo, b64, true) &&
	    field_wanted(fields, "stdout"))
		*utf8 = false;
	if (!put_bytes(all, "stderr", r ? se : NULL, le, b64, true) &&
	    field_wanted(fields, "stderr"))
		*utf8 = false;
	free(so);
	free(se);
	/* The compiler's output: both of the build's streams. */
	const json_t *build = r ? json_object_get(r, "build") : NULL;
	if (json_is_object(build)) {
		unsigned char *bo = NULL, *be = NULL;
		size_t lbo = 0, lbe = 0;
		unsigned char *both = NULL;
		if (al_compat_stream(build, "stdout", &bo, &lbo) == 0 &&
		    al_compat_stream(build, "stderr", &be, &lbe) == 0 &&
		    (both = malloc(lbo + lbe + 1)) != NULL) {
			memcpy(both, bo, lbo);
			memcpy(both + lbo, be, lbe);
		}
		if (!put_bytes(all, "compile_output", both, lbo + lbe, b64,
			       true) &&
		    field_wanted(fields, "compile_output"))
			*utf8 = false;
		free(both);
		free(bo);
		free(be);
	} else if (r != NULL && refused_flags(r)) {
		put_bytes(all, "compile_output",
			  (const unsigned char *)FLAGS_REFUSED,
			  strlen(FLAGS_REFUSED), b64, true);
	} else {
		json_object_set_new(all, "compile_output", json_null());
	}
	if (v.message != NULL)
		put_bytes(all, "message", (const unsigned char *)v.message,
			  strlen(v.message), b64, true);
	else
		json_object_set_new(all, "message", json_null());
	const json_t *ec = r ? json_object_get(r, "exit_code") : NULL;
	const json_t *sg = r ? json_object_get(r, "signal") : NULL;
	json_object_set_new(all, "exit_code",
			    json_is_integer(ec) ? json_incref((json_t *)ec)
						: json_null());
	json_object_set_new(all, "exit_signal",
			    json_is_integer(sg) ? json_incref((json_t *)sg)
						: json_null());
	json_object_set_new(all, "status",
			    json_pack("{s:i, s:s}", "id", v.status,
				      "description", statuses[v.status]));
	json_object_set_new(all, "status_id", json_integer(v.status));
	/* No program ran (compilation error, lost, refused): no figures. */
	json_t *usage = r == NULL || v.status == 6 || v.status >= 13 ? NULL
			: avg != NULL ? avg
				      : json_object_get(r, "usage");
	const char *fin = r ? json_string_value(
				      json_object_get(r, "finished_at"))
			    : NULL;
	json_object_set_new(all, "finished_at",
			    fin ? json_string(fin) : json_null());
	json_object_set_new(
		all, "time",
		usage ? seconds(json_integer_value(json_object_get(
					usage, "cpu_user_ms")) +
				json_integer_value(json_object_get(
					usage, "cpu_sys_ms")))
		      : json_null());
	json_object_set_new(
		all, "wall_time",
		usage ? seconds(json_integer_value(
				json_object_get(usage, "wall_ms")))
		      : json_null());
	json_object_set_new(
		all, "memory",
		usage ? json_integer(json_integer_value(json_object_get(
					     usage, "peak_memory_bytes")) /
				     1024)
		      : json_null());
	/* Only the fields asked for, in the order Judge0 lists them. */
	json_t *cut = json_object();
	const char *k;
	json_t *val;
	json_object_foreach(all, k, val) {
		if (field_wanted(fields, k))
			json_object_set(cut, k, val);
	}
	json_decref(all);
	return cut;
}

/* The mean of the runs' usage (those that have one), or NULL. */
static json_t *average_usage(const al_compat_req *q, json_t *runs)
{
	json_int_t cpu = 0, wall = 0, mem = 0, n = 0;
	size_t i;
	json_t *id;
	json_array_foreach(runs, i, id) {
		al_compat_out o;
		if (al_compat_lookup(q->svc, q->tenant, json_string_value(id),
				     &o) == 0 &&
		    o.result != NULL) {
			json_t *u = json_object_get(o.result, "usage");
			if (json_is_object(u)) {
				cpu += json_integer_value(
					       json_object_get(u, "cpu_user_ms")) +
				       json_integer_value(
					       json_object_get(u, "cpu_sys_ms"));
				wall += json_integer_value(
					json_object_get(u, "wall_ms"));
				mem += json_integer_value(
					json_object_get(u, "peak_memory_bytes"));
				n++;
			}
		}
		al_compat_out_clear(&o);
	}
	if (n == 0)
		return NULL;
	return json_pack("{s:I, s:I, s:I, s:I}", "cpu_user_ms", cpu / n,
			 "cpu_sys_ms", (json_int_t)0, "wall_ms", wall / n,
			 "peak_memory_bytes", mem / n);
}

/* The token's submission for tenant: 0 with *out, -ENOENT. */
static int show(const al_compat_req *q, const char *token, json_t *langs,
		const char *fields, bool b64, json_t **out, bool *utf8)
{
	al_compat_out o;
	*out = NULL;
	*utf8 = true;
	int rc = al_compat_lookup(q->svc, q->tenant, token, &o);
	if (rc < 0)
		return rc;
	json_t *stored = al_compat_store_get(q->tenant, token);
	if (stored == NULL)
		stored = json_object();
	json_t *runs = json_object_get(stored, "_runs"), *avg = NULL;
	if (rc == 0 && json_is_array(runs) &&
	    !json_is_true(json_object_get(stored, "_repeat_done"))) {
		rc = 1; /* number_of_runs: the next runs are to come */
		o.queued = false;
	} else if (rc == 0 && json_array_size(runs) > 1) {
		/* The last run's outcome and output, the runs' average
		 * time and memory (Judge0's). */
		const char *last = json_string_value(
			json_array_get(runs, json_array_size(runs) - 1));
		al_compat_out_clear(&o);
		if (last == NULL ||
		    al_compat_lookup(q->svc, q->tenant, last, &o) != 0) {
			al_compat_out_clear(&o);
			o = (al_compat_out){0};
			rc = 1;
		}
		avg = average_usage(q, runs);
	}
	*out = render(token, stored, langs, rc == 0 ? &o : NULL,
		      rc == 1 ? (o.queued ? 1 : 2) : 0, fields, b64, utf8,
		      avg);
	json_decref(avg);
	json_decref(stored);
	al_compat_out_clear(&o);
	return 0;
}

bool al_compat_judge0_accepted(al_service *svc, const char *tenant,
			       const char *token, const char *run_id)
{
	al_compat_out o;
	if (al_compat_lookup(svc, tenant, run_id, &o) != 0) {
		al_compat_out_clear(&o);
		return false;
	}
	json_t *stored = al_compat_store_get(tenant, token);
	if (stored == NULL)
		stored = json_object();
	bool utf8 = true;
	json_t *v = render(token, stored, NULL, &o, 0, "status_id", false,
			   &utf8, NULL);
	bool ok = json_integer_value(json_object_get(v, "status_id")) == 3;
	json_decref(v);
	json_decref(stored);
	al_compat_out_clear(&o);
	return ok;
}

static const char *fields_of(const al_compat_req *q, const char *dflt)
{
	const char *f = qarg(q, "fields");
	return f != NULL && f[0] != '\0' ? f : dflt;
}

#define UTF8_ERROR                                                        \
	"some attributes for this submission cannot be converted to UTF-8, " \
	"use base64_encoded=true query parameter"

static enum MHD_Result utf8_refusal(const al_compat_req *q)
{
	return j0_error(q, 400, UTF8_ERROR);
}

/* Judge0's defaults the caller did not ask for are brought down to the
 * tenant's ceilings (a value the caller gave is checked as given: past
 * a ceiling it is refused, as on /v1). */
static const char *const limit_map[][2] = {
	{"cpu_time_limit", "cpu_ms"},
	{"wall_time_limit", "wall_ms"},
	{"memory_limit", "memory_bytes"},
	{"max_processes_and_or_threads", "pids"},
	{"max_file_size", "file_bytes"},
	{"stack_limit", "stack_bytes"}};
#define N_LIMIT_MAP (sizeof(limit_map) / sizeof(limit_map[0]))

/* The Judge0 field a refusal's reason names ("gate:ceiling:pids"), or
 * NULL. */
static const char *refused_field(const char *reason)
{
	static const char pfx[] = "gate:ceiling:";
	if (reason == NULL || strncmp(reason, pfx, sizeof(pfx) - 1) != 0)
		return NULL;
	for (size_t i = 0; i < N_LIMIT_MAP; i++)
		if (strcmp(reason + sizeof(pfx) - 1, limit_map[i][1]) == 0)
			return limit_map[i][0];
	return NULL;
}

static void clamp_defaults(const al_compat_req *q, json_t *in, json_t *req)
{
	const char *const(*map)[2] = limit_map;
	json_t *limits = json_object_get(req, "limits");
	for (size_t i = 0; i < N_LIMIT_MAP; i++) {
		json_t *given = json_object_get(in, map[i][0]);
		json_t *v = json_object_get(limits, map[i][1]);
		if ((given != NULL && !json_is_null(given)) || v == NULL)
			continue;
		uint64_t ceil = al_compat_ceiling(q->svc, q->tenant, map[i][1]);
		if (ceil > 0 && (uint64_t)json_integer_value(v) > ceil)
			json_object_set_new(limits, map[i][1],
					    json_integer((json_int_t)ceil));
	}
}

/* One submission: starts its run.  *token set, or *errs / *refusal. */
static int submit(const al_compat_req *q, json_t *in, bool b64, bool wait,
		  json_t *langs, json_t **errs, char token[40],
		  al_compat_out *o, json_t **stored_out)
{
	json_t *lang = NULL;
	*errs = json_object();
	json_t *stored = parse_submission(in, b64, langs, *errs, &lang);
	*stored_out = NULL;
	*o = (al_compat_out){0};
	const char *cb_url =
		json_string_value(json_object_get(stored, "callback_url"));
	unsigned cb_tries = 0, cb_timeout = 0;
	if (cb_url != NULL) {
		char origin[256];
		al_srv_gen *gen = al_service_gen_get(q->svc);
		const al_compat_api *api =
			gen && gen->compat ? &gen->compat->judge0 : NULL;
		if (api == NULL ||
		    !al_compat_callback_allowed(api, cb_url, origin))
			add_err(*errs, "callback_url",
				"is not an allowed destination (the "
				"configuration's compat.judge0.callbacks."
				"allow)");
		else {
			cb_tries = api->callback_tries;
			cb_timeout = api->callback_timeout_ms;
		}
		al_service_gen_put(q->svc, gen);
	}
	if (json_object_size(*errs) > 0) {
		json_decref(stored);
		return -EINVAL;
	}
	json_t *req = v1_request(stored, lang);
	if (req == NULL) {
		/* The only input it refuses: airlock runs source text. */
		add_err(*errs, "source_code", "must be UTF-8 text");
		json_decref(stored);
		return -EINVAL;
	}
	clamp_defaults(q, in, req);
	int rc = al_compat_run(q->svc, q->tenant, q->principal, req, wait, o);
	if (rc < 0) {
		json_decref(req);
		json_decref(stored);
		return rc;
	}
	snprintf(token, 40, "%s", o->run_id);
	if (o->done && o->status >= 400 && o->status < 500 &&
	    !refused_flags(o->result)) {
		/* Refused before it ran: a validation error in Judge0's
		 * shape, naming airlock's outcome and reason. */
		const char *oc = json_string_value(
			json_object_get(o->result, "outcome"));
		const char *rs = json_string_value(
			json_object_get(o->result, "reason"));
		char msg[200];
		snprintf(msg, sizeof(msg), "%s%s%s", oc ? oc : "refused",
			 rs ? ": " : "", rs ? rs : "");
		add_err(*errs,
			rs && strcmp(rs, "build_flags") == 0
				? "compiler_options"
			: refused_field(rs) != NULL ? refused_field(rs)
			: rs &&
					(strncmp(rs, "gate:grant", 10) == 0 ||
					 strcmp(rs, "network") == 0) &&
					json_is_true(json_object_get(
						stored, "enable_network"))
				? "enable_network"
				: "submission",
			msg);
		json_decref(req);
		json_decref(stored);
		return o->status == 429 ? -EBUSY : -EINVAL;
	}
	/* The unpacked files served the run; the archive itself is kept. */
	json_object_del(stored, "_files");
	unsigned runs = (unsigned)stored_num(stored, "number_of_runs");
	al_compat_repeat *rp =
		runs > 1 ? al_compat_repeat_new(q->svc, q->tenant, q->principal,
						token, req, runs)
			 : NULL;
	json_decref(req);
	if (rp != NULL)
		json_object_set_new(stored, "_runs",
				    json_pack("[s]", token));
	size_t bytes = 0;
	char *text = json_dumps(stored, JSON_COMPACT);
	bytes = text ? strlen(text) : 0;
	free(text);
	al_compat_store_put(q->tenant, token, stored, bytes);
	if (rp != NULL && cb_url != NULL) {
		/* Sent once the sequence is over. */
		rp->cb_url = strdup(cb_url);
		rp->b64 = b64;
		rp->cb_tries = cb_tries;
		rp->cb_timeout_ms = cb_timeout;
	}
	if (rp != NULL && wait) {
		al_compat_repeat_run(rp);
		al_compat_repeat_free(rp);
		rp = NULL;
	} else if (rp != NULL) {
		if (al_compat_repeat_start(rp) < 0) {
			al_logf(AL_LOG_WARN, token,
				"number_of_runs: thread not started");
			al_compat_store_add_run(q->tenant, token, NULL);
		}
		cb_url = NULL;
	}
	if (cb_url != NULL &&
	    al_compat_callback_start(q->svc, q->tenant, q->principal, token,
				     cb_url, b64, cb_tries, cb_timeout) < 0)
		al_logf(AL_LOG_WARN, token, "callback thread not started");
	*stored_out = stored;
	return 0;
}

static json_t *body_json(const al_compat_req *q)
{
	return json_loadb(q->body, q->len, 0, NULL);
}

static enum MHD_Result create(const al_compat_req *q, json_t *langs)
{
	bool b64 = qbool(q, "base64_encoded"), wait = qbool(q, "wait");
	json_t *in = body_json(q), *errs = NULL, *stored = NULL;
	char token[40] = "";
	al_compat_out o;
	enum MHD_Result ret;
	int rc = submit(q, in, b64, wait, langs, &errs, token, &o, &stored);
	json_decref(in);
	if (rc == -EINVAL) {
		ret = al_compat_send(q, 422, errs, NULL, NULL);
		errs = NULL;
	} else if (rc == -EBUSY) {
		ret = al_compat_send(q, 503,
				     json_pack("{s:s}", "error",
					       "queue is full"),
				     "Retry-After", "1");
	} else if (rc < 0) {
		ret = j0_error(q, 503, "the run could not be started");
	} else if (!wait) {
		ret = al_compat_send(q, 201, json_pack("{s:s}", "token", token),
				     NULL, NULL);
	} else {
		bool utf8 = true;
		json_t *sub = NULL;
		if (json_object_get(stored, "_runs") != NULL)
			(void)show(q, token, langs,
				   fields_of(q, default_fields), b64, &sub,
				   &utf8);
		else
			sub = render(token, stored, langs, &o, 0,
				     fields_of(q, default_fields), b64, &utf8,
				     NULL);
		if (!utf8) {
			json_decref(sub);
			ret = al_compat_send(
				q, 201,
				json_pack("{s:s, s:s}", "token", token, "error",
					  UTF8_ERROR),
				NULL, NULL);
		} else {
			ret = al_compat_send(q, 201, sub, NULL, NULL);
		}
	}
	json_decref(errs);
	json_decref(stored);
	al_compat_out_clear(&o);
	return ret;
}

static enum MHD_Result create_batch(const al_compat_req *q, json_t *langs)
{
	bool b64 = qbool(q, "base64_encoded");
	json_t *in = body_json(q);
	json_t *subs = json_object_get(in, "submissions");
	if (!json_is_array(subs) || json_array_size(subs) == 0) {
		json_decref(in);
		return al_compat_send(
			q, 422,
			json_pack("{s:[s]}", "submissions",
				  "can't be blank"),
			NULL, NULL);
	}
	if (json_array_size(subs) > MAX_BATCH) {
		json_decref(in);
		char msg[64];
		snprintf(msg, sizeof(msg), "size of the batch exceeds %u",
			 MAX_BATCH);
		return al_compat_send(q, 422,
				      json_pack("{s:[s]}", "submissions", msg),
				      NULL, NULL);
	}
	json_t *out = json_array();
	size_t i;
	json_t *s;
	json_array_foreach(subs, i, s) {
		json_t *errs = NULL, *stored = NULL;
		char token[40] = "";
		al_compat_out o;
		int rc = submit(q, s, b64, false, langs, &errs, token, &o,
				&stored);
		if (rc == 0)
			json_array_append_new(out,
					      json_pack("{s:s}", "token", token));
		else if (rc == -EINVAL)
			json_array_append(out, errs);
		else
			json_array_append_new(
				out, json_pack("{s:s}", "error",
					       rc == -EBUSY
						       ? "queue is full"
						       : "the run could not be "
							 "started"));
		json_decref(errs);
		json_decref(stored);
		al_compat_out_clear(&o);
	}
	json_decref(in);
	return al_compat_send(q, 201, out, NULL, NULL);
}

static bool token_ok(const char *t)
{
	size_t n = strlen(t);
	return n > 0 && n < 40 &&
	       strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789-_") == n;
}

static enum MHD_Result get_one(const al_compat_req *q, const char *token,
			       json_t *langs)
{
	json_t *sub = NULL;
	bool utf8 = true;
	if (!token_ok(token) ||
	    show(q, token, langs, fields_of(q, default_fields),
		 qbool(q, "base64_encoded"), &sub, &utf8) < 0)
		return j0_error(q, 404, "Not Found");
	if (!utf8) {
		json_decref(sub);
		return utf8_refusal(q);
	}
	return al_compat_send(q, 200, sub, NULL, NULL);
}

static enum MHD_Result get_batch(const al_compat_req *q, json_t *langs)
{
	const char *tokens = qarg(q, "tokens");
	if (tokens == NULL || tokens[0] == '\0')
		return al_compat_send(q, 422,
				      json_pack("{s:[s]}", "tokens",
						"can't be blank"),
				      NULL, NULL);
	json_t *arr = json_array();
	const char *fields = fields_of(q, default_fields);
	bool b64 = qbool(q, "base64_encoded"), utf8 = true;
	size_t count = 0;
	for (const char *p = tokens; *p != '\0' && utf8;) {
		size_t k = strcspn(p, ",");
		char tok[64];
		snprintf(tok, sizeof(tok), "%.*s", (int)(k < 63 ? k : 63), p);
		json_t *sub = NULL;
		if (++count > MAX_BATCH) {
			json_decref(arr);
			return al_compat_send(
				q, 422,
				json_pack("{s:[s]}", "tokens",
					  "too many tokens"),
				NULL, NULL);
		}
		if (token_ok(tok) &&
		    show(q, tok, langs, fields, b64, &sub, &utf8) == 0)
			json_array_append_new(arr, sub);
		else
			json_array_append_new(arr, json_null());
		p += k;
		if (*p == ',')
			p++;
	}
	if (!utf8) {
		json_decref(arr);
		return utf8_refusal(q);
	}
	return al_compat_send(q, 200, json_pack("{s:o}", "submissions", arr),
			      NULL, NULL);
}

/* DELETE: interrupts a running submission (a finished one is kept: its
 * run is part of the audit trail) and answers with its fields. */
static enum MHD_Result delete_one(const al_compat_req *q, const char *token,
				  json_t *langs)
{
	if (!token_ok(token))
		return j0_error(q, 404, "Not Found");
	/* number_of_runs: the run going now is the last one started. */
	json_t *stored = al_compat_store_get(q->tenant, token);
	json_t *runs = json_object_get(stored, "_runs");
	const char *id = json_string_value(
		json_array_get(runs, json_array_size(runs) - 1));
	if (id == NULL)
		id = token;
	al_srv_run *run = al_service_find(q->svc, q->tenant, id);
	if (run != NULL && al_service_owns(q->svc, q->tenant, id, run) == 0)
		(void)al_service_interrupt(q->svc, run, true);
	al_service_run_put(q->svc, run);
	json_decref(stored);
	return get_one(q, token, langs);
}

static enum MHD_Result language(const al_compat_req *q, json_t *langs,
				const char *id)
{
	char *end;
	long v = strtol(id, &end, 10);
	json_t *l = *end == '\0' && end != id ? find_lang(langs, v) : NULL;
	if (l == NULL)
		return j0_error(q, 404, "Not Found");
	const char *file = json_string_value(json_object_get(l, "file"));
	return al_compat_send(
		q, 200,
		json_pack("{s:O, s:O, s:b, s:s, s:n, s:n}", "id",
			  json_object_get(l, "id"), "name",
			  json_object_get(l, "name"), "is_archived", 0,
			  "source_file", file, "compile_cmd", "run_cmd"),
		NULL, NULL);
}

static enum MHD_Result languages(const al_compat_req *q, json_t *langs)
{
	json_t *arr = json_array();
	size_t i;
	json_t *l;
	json_array_foreach(langs, i, l) {
		json_array_append_new(arr,
				      json_pack("{s:O, s:O}", "id",
						json_object_get(l, "id"),
						"name",
						json_object_get(l, "name")));
	}
	return al_compat_send(q, 200, arr, NULL, NULL);
}

static enum MHD_Result statuses_list(const al_compat_req *q)
{
	json_t *arr = json_array();
	for (int i = 1; i < N_STATUSES; i++)
		json_array_append_new(arr,
				      json_pack("{s:i, s:s}", "id", i,
						"description", statuses[i]));
	return al_compat_send(q, 200, arr, NULL, NULL);
}

static enum MHD_Result config_info(const al_compat_req *q)
{
	json_t *o = json_pack(
		"{s:b, s:b, s:b, s:[], s:b, s:b, s:b, s:n, s:n, s:b, s:i}",
		"maintenance_mode", 0, "enable_wait_result", 1,
		"enable_compiler_options", 1,
		"allowed_languages_for_compile_options",
		"enable_command_line_arguments", 1, "enable_submission_delete",
		1, "enable_callbacks", 1, "callbacks_max_tries",
		"callbacks_timeout", "enable_additional_files", 1,
		"max_queue_size", 100);
	for (size_t i = 0; i < N_LIMITS; i++) {
		char key[64];
		bool real = i < 3;
		json_object_set_new(
			o, j0_limits[i].name,
			real ? json_real(j0_limits[i].dflt)
			     : json_integer((json_int_t)j0_limits[i].dflt));
		snprintf(key, sizeof(key), "max_%s", j0_limits[i].name);
		json_object_set_new(
			o, key,
			real ? json_real(j0_limits[i].max)
			     : json_integer((json_int_t)j0_limits[i].max));
	}
	json_object_set_new(o, "enable_per_process_and_thread_time_limit",
			    json_false());
	json_object_set_new(o,
			    "allow_enable_per_process_and_thread_time_limit",
			    json_false());
	json_object_set_new(o, "enable_per_process_and_thread_memory_limit",
			    json_false());
	json_object_set_new(
		o, "allow_enable_per_process_and_thread_memory_limit",
		json_false());
	json_object_set_new(o, "redirect_stderr_to_stdout", json_false());
	json_object_set_new(o, "max_extract_size",
			    json_integer(AL_COMPAT_ZIP_MAX_BYTES / 1024));
	json_object_set_new(o, "enable_batched_submissions", json_true());
	json_object_set_new(o, "max_submission_batch_size",
			    json_integer(MAX_BATCH));
	json_object_set_new(o, "submission_cache_duration", json_real(0));
	json_object_set_new(o, "use_docs_as_homepage", json_false());
	al_srv_gen *gen = al_service_gen_get(q->svc);
	const al_compat_api *api =
		gen && gen->compat ? &gen->compat->judge0 : NULL;
	bool cb = api != NULL && api->n_callback_allow > 0;
	json_object_set_new(o, "enable_callbacks", json_boolean(cb));
	json_object_set_new(o, "callbacks_max_tries",
			    cb ? json_integer(api->callback_tries)
			       : json_null());
	json_object_set_new(o, "callbacks_timeout",
			    cb ? json_real(api->callback_timeout_ms / 1000.0)
			       : json_null());
	al_service_gen_put(q->svc, gen);
	json_object_set_new(o, "allow_enable_network", json_true());
	json_object_set_new(o, "enable_network", json_false());
	return al_compat_send(q, 200, o, NULL, NULL);
}

/* Only what is safe to show: the architecture, the CPU count and the
 * memory size (no host name, kernel build, or load). */
static enum MHD_Result system_info(const al_compat_req *q)
{
	struct utsname u;
	char cpus[16], mem[32];
	if (uname(&u) != 0)
		snprintf(u.machine, sizeof(u.machine), "unknown");
	snprintf(cpus, sizeof(cpus), "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	snprintf(mem, sizeof(mem), "%lldMi",
		 (long long)sysconf(_SC_PHYS_PAGES) *
			 (long long)sysconf(_SC_PAGESIZE) / (1024 * 1024));
	return al_compat_send(q, 200,
			      json_pack("{s:s, s:s, s:s}", "Architecture",
					u.machine, "CPU(s)", cpus, "Mem", mem),
			      NULL, NULL);
}

json_t *al_compat_judge0_body(al_service *svc, const char *tenant,
			      const char *token, bool b64)
{
	al_compat_req q = {.svc = svc};
	snprintf(q.tenant, sizeof(q.tenant), "%s", tenant);
	json_t *langs = j0_languages(&q), *sub = NULL;
	bool utf8 = true;
	if (langs != NULL &&
	    (show(&q, token, langs, default_fields, b64, &sub, &utf8) < 0 ||
	     !utf8)) {
		/* Not UTF-8 and not base64: what Judge0 answers a read. */
		json_decref(sub);
		sub = json_pack("{s:s, s:s}", "token", token, "error",
				UTF8_ERROR);
	}
	json_decref(langs);
	return sub;
}

enum MHD_Result al_compat_judge0(const al_compat_req *q)
{
	const char *u = q->url, *m = q->method;
	bool get = strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
	bool post = strcmp(m, "POST") == 0;
	if (strcmp(u, "/statuses") == 0 && get)
		return statuses_list(q);
	if (strcmp(u, "/about") == 0 && get)
		return al_compat_send(
			q, 200,
			json_pack("{s:s, s:s, s:s, s:s}", "version", J0_VERSION,
				  "homepage", "", "source_code", "",
				  "maintainer", "airlock"),
			NULL, NULL);
	if (strcmp(u, "/version") == 0 && get)
		return al_compat_send_text(q, 200, J0_VERSION,
					   "text/plain; charset=utf-8");
	if (strcmp(u, "/config_info") == 0 && get)
		return config_info(q);
	if (strcmp(u, "/system_info") == 0 && get)
		return system_info(q);
	json_t *langs = j0_languages(q);
	if (langs == NULL)
		return j0_error(q, 503, "cannot probe the providers");
	enum MHD_Result ret;
	if (strcmp(u, "/languages") == 0 && get)
		ret = languages(q, langs);
	else if (strncmp(u, "/languages/", 11) == 0 && get)
		ret = language(q, langs, u + 11);
	else if (strcmp(u, "/submissions") == 0 && post)
		ret = create(q, langs);
	else if (strcmp(u, "/submissions/batch") == 0 && post)
		ret = create_batch(q, langs);
	else if (strcmp(u, "/submissions/batch") == 0 && get)
		ret = get_batch(q, langs);
	else if (strncmp(u, "/submissions/", 13) == 0 && get)
		ret = get_one(q, u + 13, langs);
	else if (strncmp(u, "/submissions/", 13) == 0 &&
		 strcmp(m, "DELETE") == 0)
		ret = delete_one(q, u + 13, langs);
	else if (strcmp(u, "/submissions") == 0 && get)
		ret = j0_error(q, 400,
			       "listing submissions is not supported; read "
			       "them by token or use /v1/runs");
	else
		ret = j0_error(q, 404, "Not Found");
	json_decref(langs);
	return ret;
}
