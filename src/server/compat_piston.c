/* Piston v2 (docs/compat.md): GET /api/v2/runtimes, GET /api/v2/packages
 * and POST /api/v2/execute, answered from airlock runs.  Errors are
 * Piston's: a status code and {"message": ...}. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/json.h>

#include "core/util.h"
#include "json/base64.h"
#include "server/compat.h"
#include "server/compat_names.h"
#include "server/compat_piston.h"

static enum MHD_Result message(const al_compat_req *q, unsigned status,
			       const char *msg)
{
	return al_compat_send(q, status, json_pack("{s:s}", "message", msg),
			      NULL, NULL);
}

/* The rows Piston lists: one per Piston name, the first observed. */
typedef struct runtime {
	const al_compat_lang *lang;
	const char *version;
} runtime;

static size_t runtimes(json_t *langs, runtime *out, size_t max)
{
	size_t n = 0;
	const al_compat_lang *l;
	for (size_t i = 0; (l = al_compat_lang_at(i)) != NULL && n < max;
	     i++) {
		const char *v = al_compat_observed(langs, l->airlock);
		bool dup = false;
		for (size_t j = 0; j < n; j++)
			dup = dup || strcmp(out[j].lang->piston, l->piston) == 0;
		if (v != NULL && !dup)
			out[n++] = (runtime){l, v};
	}
	return n;
}

static enum MHD_Result list(const al_compat_req *q, bool packages)
{
	json_t *langs = al_compat_languages(q->svc, q->tenant);
	if (langs == NULL)
		return message(q, 500, "cannot probe the providers");
	runtime rt[32];
	size_t n = runtimes(langs, rt, 32);
	json_t *arr = json_array();
	for (size_t i = 0; arr != NULL && i < n; i++) {
		json_t *o;
		if (packages) {
			o = json_pack("{s:s, s:s, s:b}", "language",
				      rt[i].lang->runtime ? rt[i].lang->runtime
							  : rt[i].lang->piston,
				      "language_version", rt[i].version,
				      "installed", 1);
		} else {
			json_t *al = json_array();
			for (size_t k = 0; rt[i].lang->aliases[k] != NULL; k++)
				json_array_append_new(
					al, json_string(rt[i].lang->aliases[k]));
			o = json_pack("{s:s, s:s, s:o}", "language",
				      rt[i].lang->piston, "version",
				      rt[i].version, "aliases", al);
			if (o != NULL && rt[i].lang->runtime != NULL)
				json_object_set_new(
					o, "runtime",
					json_string(rt[i].lang->runtime));
		}
		json_array_append_new(arr, o);
	}
	json_decref(langs);
	return al_compat_send(q, 200, arr, NULL, NULL);
}

/* SemVer selector as Piston clients send them: "*", "x", an exact
 * version, a prefix ("3", "3.11"), "3.x", "^3", "~3.11". */
static bool version_matches(const char *sel, const char *ver)
{
	if (sel[0] == '^' || sel[0] == '~' || sel[0] == '=')
		sel++;
	if (strcmp(sel, "*") == 0 || strcmp(sel, "x") == 0 || sel[0] == '\0')
		return true;
	while (*sel != '\0') {
		size_t a = strcspn(sel, "."), b = strcspn(ver, ".");
		bool wild = (a == 1 && (sel[0] == 'x' || sel[0] == '*' ||
					sel[0] == 'X'));
		if (!wild && (a != b || strncmp(sel, ver, a) != 0))
			return false;
		sel += a;
		ver += b;
		if (*sel == '.')
			sel++;
		if (*ver == '.')
			ver++;
		else if (*sel != '\0' && *ver == '\0')
			return wild && strspn(sel, "x*X.") == strlen(sel);
	}
	return true;
}

/* One file's bytes from its content and encoding. */
static int file_bytes(json_t *f, unsigned char **out, size_t *len,
		      const char **why)
{
	json_t *c = json_object_get(f, "content");
	const char *enc = json_string_value(json_object_get(f, "encoding"));
	if (!json_is_string(c)) {
		*why = "content is required as a string";
		return -EINVAL;
	}
	const char *s = json_string_value(c);
	size_t n = json_string_length(c);
	if (enc != NULL && strcmp(enc, "base64") == 0) {
		if (al_base64_decode(s, n, out, len) < 0) {
			*why = "content is not valid base64";
			return -EINVAL;
		}
		return 0;
	}
	if (enc != NULL && strcmp(enc, "hex") == 0) {
		if (n % 2 != 0 || (*out = malloc(n / 2 + 1)) == NULL) {
			*why = "content is not valid hex";
			return -EINVAL;
		}
		for (size_t i = 0; i < n; i += 2) {
			int hi = al_hex_digit(s[i]), lo = al_hex_digit(s[i + 1]);
			if (hi < 0 || lo < 0) {
				free(*out);
				*out = NULL;
				*why = "content is not valid hex";
				return -EINVAL;
			}
			(*out)[i / 2] = (unsigned char)(hi * 16 + lo);
		}
		*len = n / 2;
		(*out)[*len] = '\0';
		return 0;
	}
	/* utf8, and any other value, as Piston does. */
	*out = malloc(n + 1);
	if (*out == NULL)
		return -ENOMEM;
	memcpy(*out, s, n + 1);
	*len = n;
	return 0;
}

/* A limit in the request: a number ≥ 0 sets it, -1 (or absent) leaves
 * the tenant's ceiling (-1) or the default (absent). */
static int limit(json_t *req, const char *key, json_t *limits,
		 const char *name, uint64_t ceiling, const char **why)
{
	json_t *v = json_object_get(req, key);
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_number(v)) {
		*why = key;
		return -EINVAL;
	}
	double d = json_number_value(v);
	if (d < 0) {
		if (ceiling > 0)
			json_object_set_new(limits, name,
					    json_integer((json_int_t)ceiling));
		return 0;
	}
	json_object_set_new(limits, name,
			    json_integer(d < 1 ? 1 : (json_int_t)d));
	return 0;
}

/* The /v1 request of an execute body; NULL with *status and *why. */
json_t *al_compat_piston_translate(const al_compat_req *q, json_t *in,
			 const al_compat_lang **lang, const char **version,
			 json_t *langs, unsigned *status, char *why,
			 size_t why_len)
{
	const char *name = json_string_value(json_object_get(in, "language"));
	const char *sel = json_string_value(json_object_get(in, "version"));
	json_t *files = json_object_get(in, "files");
	*status = 400;
	if (name == NULL) {
		snprintf(why, why_len, "language is required as a string");
		return NULL;
	}
	/* piston-client leaves the version out when the language is given
	 * by an alias: any version, as its users expect. */
	if (sel == NULL)
		sel = "*";
	if (!json_is_array(files) || json_array_size(files) == 0) {
		snprintf(why, why_len, "files is required as an array");
		return NULL;
	}
	*lang = NULL;
	const al_compat_lang *l;
	for (size_t i = 0; (l = al_compat_lang_at(i)) != NULL; i++) {
		const char *v = al_compat_observed(langs, l->airlock);
		if (v != NULL && al_compat_lang_named(l, name) &&
		    version_matches(sel, v)) {
			*lang = l;
			*version = v;
			break;
		}
	}
	if (*lang == NULL) {
		snprintf(why, why_len, "%.64s-%.64s runtime is unknown", name,
			 sel);
		return NULL;
	}
	json_t *req = json_pack("{s:s}", "language", (*lang)->airlock);
	json_t *wfiles = json_array(), *limits = json_object();
	size_t i;
	json_t *f;
	const char *err = NULL;
	json_array_foreach(files, i, f) {
		unsigned char *b = NULL;
		size_t n = 0;
		if (!json_is_object(f) || file_bytes(f, &b, &n, &err) < 0) {
			snprintf(why, why_len, "files[%zu].%s", i,
				 err ? err : "content is required as a string");
			goto fail;
		}
		if (i == 0) {
			if (!al_utf8_valid(b, n) || memchr(b, 0, n) != NULL) {
				free(b);
				snprintf(why, why_len,
					 "files[0]: the entry point must be "
					 "UTF-8 text");
				goto fail;
			}
			json_object_set_new(req, "code",
					    json_stringn((char *)b, n));
			free(b);
			continue;
		}
		const char *fname =
			json_string_value(json_object_get(f, "name"));
		char def[32];
		snprintf(def, sizeof(def), "file%zu.code", i);
		char *b64 = al_base64_encode(b, n);
		free(b);
		json_array_append_new(wfiles,
				      json_pack("{s:s, s:s}", "path",
						fname ? fname : def,
						"content_b64", b64 ? b64 : ""));
		free(b64);
	}
	json_t *v = json_object_get(in, "stdin");
	if (json_is_string(v))
		json_object_set(req, "stdin", v);
	v = json_object_get(in, "args");
	if (json_is_array(v)) {
		json_t *argv = json_array();
		json_t *a;
		json_array_foreach(v, i, a) {
			if (json_is_string(a))
				json_array_append(argv, a);
			else if (json_is_number(a)) {
				char num[64];
				snprintf(num, sizeof(num), "%g",
					 json_number_value(a));
				json_array_append_new(argv, json_string(num));
			}
		}
		json_object_set_new(req, "argv", argv);
	}
	if (limit(in, "run_timeout", limits, "wall_ms",
		  al_compat_ceiling(q->svc, q->tenant, "wall_ms"), &err) < 0 ||
	    limit(in, "run_cpu_time", limits, "cpu_ms",
		  al_compat_ceiling(q->svc, q->tenant, "cpu_ms"), &err) < 0 ||
	    limit(in, "run_memory_limit", limits, "memory_bytes",
		  al_compat_ceiling(q->svc, q->tenant, "memory_bytes"),
		  &err) < 0) {
		snprintf(why, why_len, "%s must be a number", err);
		goto fail;
	}
	if ((*lang)->compiled) {
		/* The build step's own limits; -1 leaves its default. */
		json_t *build = json_object();
		if (limit(in, "compile_timeout", build, "wall_ms", 0, &err) < 0 ||
		    limit(in, "compile_cpu_time", build, "cpu_ms", 0, &err) < 0 ||
		    limit(in, "compile_memory_limit", build, "memory_bytes", 0,
			  &err) < 0) {
			json_decref(build);
			snprintf(why, why_len, "%s must be a number", err);
			goto fail;
		}
		if (json_object_size(build) > 0)
			json_object_set_new(limits, "build", build);
		else
			json_decref(build);
	}
	if (json_array_size(wfiles) > 0) {
		json_object_set(req, "files", wfiles);
		json_object_set_new(req, "grant",
				    json_pack("{s:s}", "workspace", "ro"));
	}
	if (json_object_size(limits) > 0)
		json_object_set(req, "limits", limits);
	json_decref(wfiles);
	json_decref(limits);
	return req;
fail:
	json_decref(req);
	json_decref(wfiles);
	json_decref(limits);
	return NULL;
}

static json_t *uint_or_null(const json_t *v)
{
	return json_is_integer(v) ? json_integer(json_integer_value(v))
				  : json_null();
}

/* One stage object: from the result (run) or its build object
 * (compile).  Piston's status codes: TO (time), SG (signal), RE
 * (non-zero exit), OL/EL (stdout/stderr past the output limit), XX
 * (internal error); TO, OL and EL carry SIGKILL as Piston's do.
 * interleaved: both streams in arrival order, or NULL (joined stdout
 * first). */
json_t *al_compat_piston_stage(const json_t *r,
			       const unsigned char *interleaved,
		     size_t il_len)
{
	const char *outcome = json_string_value(json_object_get(r, "outcome"));
	const char *reason = json_string_value(json_object_get(r, "reason"));
	json_t *usage = json_object_get(r, "usage");
	unsigned char *so = NULL, *se = NULL;
	size_t lo = 0, le = 0;
	if (al_compat_stream(r, "stdout", &so, &lo) < 0 ||
	    al_compat_stream(r, "stderr", &se, &le) < 0) {
		free(so);
		return NULL;
	}
	json_t *output;
	if (interleaved != NULL) {
		output = al_compat_text(interleaved, il_len);
	} else {
		unsigned char *both = malloc(lo + le + 1);
		if (both != NULL) {
			memcpy(both, so, lo);
			memcpy(both + lo, se, le);
		}
		output = both ? al_compat_text(both, lo + le) : NULL;
		free(both);
	}
	const json_t *sn = json_object_get(r, "signal");
	const char *st = NULL;
	char m[96] = "";
	if (outcome == NULL) {
		st = "XX";
	} else if (strcmp(outcome, "timed_out") == 0 ||
		   (reason != NULL && strcmp(reason, "cpu_limit") == 0)) {
		st = "TO";
		snprintf(m, sizeof(m), "%s",
			 strcmp(outcome, "timed_out") == 0
				 ? "Time limit exceeded (wall clock)"
				 : "Time limit exceeded");
	} else if (json_is_true(json_object_get(r, "stdout_truncated"))) {
		st = "OL";
		snprintf(m, sizeof(m), "stdout length exceeded");
	} else if (json_is_true(json_object_get(r, "stderr_truncated"))) {
		st = "EL";
		snprintf(m, sizeof(m), "stderr length exceeded");
	} else if (json_is_integer(sn)) {
		st = "SG";
		snprintf(m, sizeof(m), "Caught fatal signal %lld",
			 (long long)json_integer_value(sn));
	} else if (strcmp(outcome, "failed") == 0) {
		st = "RE";
		snprintf(m, sizeof(m), "Exited with error status %lld",
			 (long long)json_integer_value(
				 json_object_get(r, "exit_code")));
	} else if (strcmp(outcome, "completed") != 0) {
		st = "XX";
		snprintf(m, sizeof(m), "%s%s%s", outcome, reason ? ": " : "",
			 reason ? reason : "");
	}
	json_t *sig = json_null();
	if (json_is_integer(sn)) {
		const char *abbrev = sigabbrev_np((int)json_integer_value(sn));
		char sname[32];
		snprintf(sname, sizeof(sname), "SIG%s", abbrev ? abbrev : "?");
		sig = json_string(sname);
	} else if (st != NULL && (strcmp(st, "TO") == 0 ||
				  strcmp(st, "OL") == 0 ||
				  strcmp(st, "EL") == 0)) {
		sig = json_string("SIGKILL");
	}
	/* A build object has its wall time only (no CPU or memory
	 * figures): those are null rather than invented. */
	json_t *cpu = json_null(), *wall, *mem = json_null();
	if (usage != NULL) {
		json_decref(cpu);
		cpu = json_integer(
			json_integer_value(json_object_get(usage, "cpu_user_ms")) +
			json_integer_value(json_object_get(usage, "cpu_sys_ms")));
		wall = json_integer(
			json_integer_value(json_object_get(usage, "wall_ms")));
		json_decref(mem);
		mem = json_integer(json_integer_value(
			json_object_get(usage, "peak_memory_bytes")));
	} else {
		wall = json_integer(
			json_integer_value(json_object_get(r, "wall_ms")));
	}
	json_t *out = json_pack(
		"{s:o?, s:o?, s:o?, s:o, s:o, s:o?, s:o?, s:o, s:o, s:o}",
		"stdout", al_compat_text(so, lo), "stderr",
		al_compat_text(se, le), "output", output, "code",
		uint_or_null(json_object_get(r, "exit_code")), "signal", sig,
		"message", m[0] ? json_string(m) : json_null(), "status",
		st ? json_string(st) : json_null(), "cpu_time", cpu,
		"wall_time", wall, "memory", mem);
	free(so);
	free(se);
	return out;
}

/* The answer's body: language, version, compile (when the language
 * built) and run (the compile stage again when the build failed, as
 * Piston does). */
static json_t *answer_body(const al_compat_lang *lang, const char *version,
			   const al_compat_out *o)
{
	json_t *body = json_pack("{s:s, s:s}", "language", lang->piston,
				 "version", version);
	const json_t *build = json_object_get(o->result, "build");
	const char *reason =
		json_string_value(json_object_get(o->result, "reason"));
	if (body == NULL)
		return NULL;
	if (json_is_object(build)) {
		json_t *c = al_compat_piston_stage(build, NULL, 0);
		if (c == NULL)
			goto fail;
		json_object_set_new(body, "compile", c);
		/* No run after a failed build: Piston then answers the
		 * compile stage as the run too (clients read run.*). */
		if (reason != NULL && strcmp(reason, "build_failed") == 0)
			json_object_set(body, "run", c);
	}
	if (reason == NULL || strcmp(reason, "build_failed") != 0) {
		json_t *run = al_compat_piston_stage(o->result,
				    o->output_whole ? (o->output ? o->output
						      : (const unsigned char *)"")
						    : NULL,
				    o->output_len);
		if (run == NULL)
			goto fail;
		json_object_set_new(body, "run", run);
	}
	return body;
fail:
	json_decref(body);
	return NULL;
}

/* POST /api/v2/packages: the toolchains are the host's, observed, so a
 * package that is there is "installed" already (Piston's answer, nothing
 * done) and any other does not exist. */
static enum MHD_Result install(const al_compat_req *q)
{
	json_t *in = json_loadb(q->body, q->len, 0, NULL);
	const char *name = json_string_value(json_object_get(in, "language"));
	const char *sel = json_string_value(json_object_get(in, "version"));
	json_t *langs = al_compat_languages(q->svc, q->tenant);
	enum MHD_Result ret;
	if (langs == NULL) {
		ret = message(q, 500, "cannot probe the providers");
	} else {
		runtime rt[32];
		size_t n = runtimes(langs, rt, 32), i;
		for (i = 0; name && sel && i < n; i++) {
			const char *pkg = rt[i].lang->runtime
						  ? rt[i].lang->runtime
						  : rt[i].lang->piston;
			if (strcmp(pkg, name) == 0 &&
			    version_matches(sel, rt[i].version))
				break;
		}
		if (name != NULL && sel != NULL && i < n) {
			ret = al_compat_send(q, 200,
					     json_pack("{s:s, s:s}", "language",
						       name, "version",
						       rt[i].version),
					     NULL, NULL);
		} else {
			char why[200];
			snprintf(why, sizeof(why),
				 "Requested package %.64s-%.64s does not exist",
				 name ? name : "", sel ? sel : "");
			ret = message(q, 404, why);
		}
	}
	json_decref(langs);
	json_decref(in);
	return ret;
}

static enum MHD_Result execute(const al_compat_req *q)
{
	json_t *in = json_loadb(q->body, q->len, 0, NULL);
	if (!json_is_object(in)) {
		json_decref(in);
		return message(q, 400, "the body must be a JSON object");
	}
	json_t *langs = al_compat_languages(q->svc, q->tenant);
	if (langs == NULL) {
		json_decref(in);
		return message(q, 500, "cannot probe the providers");
	}
	const al_compat_lang *lang = NULL;
	const char *version = NULL;
	unsigned status = 400;
	char why[200];
	json_t *req = al_compat_piston_translate(q, in, &lang, &version, langs,
						 &status, why,
				sizeof(why));
	json_decref(in);
	if (req == NULL) {
		json_decref(langs);
		return message(q, status, why);
	}
	al_compat_out o;
	int rc = al_compat_run(q->svc, q->tenant, q->principal, req, true, &o);
	json_decref(req);
	enum MHD_Result ret;
	if (rc < 0 || o.result == NULL) {
		ret = message(q, rc == -ESHUTDOWN ? 503 : 500,
			      "the run could not be started");
	} else if (o.status >= 400 && o.status < 500) {
		/* Refused before it ran: the /v1 status, Piston's shape. */
		const char *oc = json_string_value(
			json_object_get(o.result, "outcome"));
		const char *rs = json_string_value(
			json_object_get(o.result, "reason"));
		snprintf(why, sizeof(why), "%s%s%s", oc ? oc : "refused",
			 rs ? ": " : "", rs ? rs : "");
		ret = al_compat_send(q, o.status,
				     json_pack("{s:s}", "message", why),
				     o.status == 429 ? "Retry-After" : NULL,
				     "1");
	} else {
		json_t *body = answer_body(lang, version, &o);
		ret = body == NULL ? message(q, 500, "out of memory")
				   : al_compat_send(q, 200, body, NULL, NULL);
	}
	json_decref(langs);
	al_compat_out_clear(&o);
	return ret;
}

enum MHD_Result al_compat_piston(const al_compat_req *q)
{
	const char *p = q->url + strlen("/api/v2");
	bool get = strcmp(q->method, "GET") == 0 ||
		   strcmp(q->method, "HEAD") == 0;
	if (strcmp(p, "/runtimes") == 0 && get)
		return list(q, false);
	if (strcmp(p, "/packages") == 0 && get)
		return list(q, true);
	if (strcmp(p, "/execute") == 0 && strcmp(q->method, "POST") == 0)
		return execute(q);
	if (strcmp(p, "/connect") == 0)
		return al_compat_ws_answer(q, AL_COMPAT_PISTON);
	if (strcmp(p, "/packages") == 0 && strcmp(q->method, "POST") == 0)
		return install(q);
	if (strcmp(p, "/packages") == 0)
		return message(q, 501,
			       "packages are the host's observed toolchains; "
			       "airlock does not remove them through the API");
	if (strcmp(p, "/runtimes") == 0 || strcmp(p, "/execute") == 0)
		return message(q, 405, "method not allowed");
	return message(q, 404, "Not found");
}
