/* al_request_to_json (canonical form) and al_request_describe (log line). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <airlock/json.h>

#include "json/build_json.h"
#include "json/field_codec.h"
#include "json/limits_table.h"
#include "json/toolbelt_json.h"
#include "json/request_fields.h"

static json_t *string_array(char *const *v, size_t n)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr != NULL && i < n; i++) {
		if (json_array_append_new(arr, json_string(v[i])) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *files_json(const al_request *req)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr != NULL && i < req->n_files; i++) {
		const al_file *f = &req->files[i];
		char mode[8];
		snprintf(mode, sizeof(mode), "%04o", f->mode & 07777u);
		json_t *o = json_object();
		if (o == NULL || jf_set(o, "path", json_string(f->path)) < 0 ||
		    jf_set(o, "mode", json_string(mode)) < 0 ||
		    jf_set_bytes(o, "content", "content_b64", &f->content) < 0) {
			json_decref(o);
			json_decref(arr);
			return NULL;
		}
		/* append_new releases o even when it fails */
		if (json_array_append_new(arr, o) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *limits_json(const al_limits *l)
{
	json_t *o = json_object();
	for (const al_limit_row *row = al_limit_rows; o != NULL && row->bit;
	     row++) {
		if (!(l->set & row->bit))
			continue;
		if (jf_set(o, row->name,
			   json_integer((json_int_t)al_limit_get(l, row->bit))) <
		    0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *grant_json(const al_grant *g)
{
	json_t *o = json_object();
	if (o == NULL ||
	    jf_set(o, "network", json_string(al_network_name(g->network))) < 0 ||
	    jf_set(o, "workspace",
		   json_string(al_workspace_mode_name(g->workspace))) < 0 ||
	    jf_set(o, "secrets", string_array(g->secrets, g->n_secrets)) < 0 ||
	    jf_set(o, "streaming", json_boolean(g->streaming)) < 0 ||
	    al_toolbelt_grant_emit(o, g) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *env_json(const al_request *req)
{
	json_t *o = json_object();
	for (size_t i = 0; o != NULL && i < req->n_env; i++) {
		if (jf_set(o, req->env[i].name,
			   json_string(req->env[i].value)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *toolchain_json(const al_request *req)
{
	json_t *o = json_object();
	for (size_t i = 0; o != NULL && i < req->n_toolchain; i++) {
		if (jf_set(o, req->toolchain[i].toolchain,
			   json_string(req->toolchain[i].constraint)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

char *al_request_to_json(const al_request *req)
{
	char *text = NULL;
	json_t *root = json_object();
	if (root == NULL)
		return NULL;
	/* json_stringn refuses invalid UTF-8: such code has no JSON form. */
	if (jf_set(root, "language", jf_string_or_null(req->language)) < 0 ||
	    jf_set(root, "code",
		   json_stringn(req->code.len ? (const char *)req->code.data : "",
				req->code.len)) < 0 ||
	    jf_set(root, "code_sha256", jf_string_or_null(req->code_sha256)) <
		    0 ||
	    jf_set(root, "argv", string_array(req->argv, req->argc)) < 0 ||
	    jf_set(root, "files", files_json(req)) < 0 ||
	    jf_set(root, "outputs", string_array(req->outputs, req->n_outputs)) <
		    0 ||
	    jf_set(root, "purpose", json_string(al_purpose_name(req->purpose))) <
		    0 ||
	    jf_set(root, "limits", limits_json(&req->limits)) < 0 ||
	    jf_set(root, "grant", grant_json(&req->grant)) < 0 ||
	    jf_set(root, "env", env_json(req)) < 0 ||
	    jf_set(root, "idempotency_key",
		   jf_string_or_null(req->idempotency_key)) < 0 ||
	    jf_set(root, "isolation",
		   json_string(al_isolation_name(req->isolation))) < 0 ||
	    jf_set(root, "toolchain", toolchain_json(req)) < 0 ||
	    al_request_emit_fields(root, req) < 0 ||
	    (req->image != NULL &&
	     jf_set(root, "image", json_string(req->image)) < 0))
		goto out;
	if (req->has_stdin) {
		if (jf_set_bytes(root, "stdin", "stdin_b64", &req->stdin_data) < 0)
			goto out;
	} else if (jf_set(root, "stdin", json_null()) < 0) {
		goto out;
	}
	if (al_build_request_emit(root, req) < 0)
		goto out;
	text = jf_dump(root, JSON_SORT_KEYS | JSON_COMPACT);
out:
	json_decref(root);
	return text;
}

/* ---- describe --------------------------------------------------------- */

/* A growing string; on allocation failure `failed` sticks. */
typedef struct sbuf {
	char *s;
	size_t len, cap;
	bool failed;
} sbuf;

static void sb_add(sbuf *b, const char *p, size_t n)
{
	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *grown = realloc(b->s, cap);
		if (grown == NULL) {
			b->failed = true;
			return;
		}
		b->s = grown;
		b->cap = cap;
	}
	memcpy(b->s + b->len, p, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void sb_printf(sbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	/* clang-analyzer 14 misreads glibc's va_start here (false positive) */
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap); // NOLINT(clang-analyzer-valist.Uninitialized)
	va_end(ap);
	if (n < 0)
		b->failed = true;
	else
		sb_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n
							: sizeof(tmp) - 1);
}

/* Quoted, with anything outside printable ASCII escaped, so a request
 * built in code (not parsed) cannot inject a line into a log. */
static void sb_quoted(sbuf *b, const char *s)
{
	sb_add(b, "\"", 1);
	for (const unsigned char *p = (const unsigned char *)(s ? s : "");
	     *p; p++) {
		if (*p == '"' || *p == '\\')
			sb_printf(b, "\\%c", *p);
		else if (*p < 0x20 || *p > 0x7e)
			sb_printf(b, "\\x%02x", *p);
		else
			sb_add(b, (const char *)p, 1);
	}
	sb_add(b, "\"", 1);
}

static const char *or_unknown(const char *name)
{
	return name != NULL ? name : "?";
}

char *al_request_describe(const al_request *req)
{
	sbuf b = {0};
	char hex[65];

	sb_add(&b, "language=", 9);
	sb_quoted(&b, req->language);
	al_sha256_hex(req->code.data, req->code.len, hex);
	sb_printf(&b, " code_bytes=%zu code_sha256=%s", req->code.len, hex);
	if (req->has_stdin) {
		al_sha256_hex(req->stdin_data.data, req->stdin_data.len, hex);
		sb_printf(&b, " stdin_bytes=%zu stdin_sha256=%s",
			  req->stdin_data.len, hex);
	} else {
		sb_add(&b, " stdin=none", 11);
	}
	sb_printf(&b, " argc=%zu files=[", req->argc);
	for (size_t i = 0; i < req->n_files; i++) {
		if (i)
			sb_add(&b, ",", 1);
		sb_quoted(&b, req->files[i].path);
		sb_printf(&b, ":%zu:%04o", req->files[i].content.len,
			  req->files[i].mode & 07777u);
	}
	sb_add(&b, "] outputs=[", 11);
	for (size_t i = 0; i < req->n_outputs; i++) {
		if (i)
			sb_add(&b, ",", 1);
		sb_quoted(&b, req->outputs[i]);
	}
	sb_add(&b, "] env=[", 7);
	for (size_t i = 0; i < req->n_env; i++) {
		if (i)
			sb_add(&b, ",", 1);
		sb_quoted(&b, req->env[i].name);
	}
	sb_add(&b, "] limits={", 10);
	for (const al_limit_row *row = al_limit_rows; row->bit; row++)
		sb_printf(&b, "%s%s=%llu%s", row == al_limit_rows ? "" : ",",
			  row->name,
			  (unsigned long long)al_limit_get(&req->limits,
							   row->bit),
			  (req->limits.set & row->bit) ? "" : "(default)");
	sb_printf(&b, "} grant={network=%s,workspace=%s,streaming=%s,secrets=[",
		  or_unknown(al_network_name(req->grant.network)),
		  or_unknown(al_workspace_mode_name(req->grant.workspace)),
		  req->grant.streaming ? "true" : "false");
	for (size_t i = 0; i < req->grant.n_secrets; i++) {
		if (i)
			sb_add(&b, ",", 1);
		sb_quoted(&b, req->grant.secrets[i]);
	}
	sb_printf(&b, "]} purpose=%s isolation=%s toolchain={",
		  or_unknown(al_purpose_name(req->purpose)),
		  or_unknown(al_isolation_name(req->isolation)));
	for (size_t i = 0; i < req->n_toolchain; i++) {
		if (i)
			sb_add(&b, ",", 1);
		sb_quoted(&b, req->toolchain[i].toolchain);
		sb_add(&b, ":", 1);
		sb_quoted(&b, req->toolchain[i].constraint);
	}
	sb_add(&b, "} idempotency_key=", 18);
	if (req->idempotency_key != NULL)
		sb_quoted(&b, req->idempotency_key);
	else
		sb_add(&b, "none", 4);
	if (req->code_sha256 != NULL)
		sb_add(&b, " code_pinned=true", 17);
	if (req->name != NULL) {
		sb_add(&b, " name=", 6);
		sb_quoted(&b, req->name);
	}
	/* exec: its length only, like argv (values may be secrets). */
	if (req->exec != NULL)
		sb_printf(&b, " exec_argc=%zu", req->n_exec);
	if (req->continues != NULL) {
		sb_add(&b, " continues=", 11);
		sb_quoted(&b, req->continues);
	}
	if (req->image != NULL) {
		sb_add(&b, " image=", 7);
		sb_quoted(&b, req->image);
	}
	if (b.failed) {
		free(b.s);
		return NULL;
	}
	return b.s;
}
