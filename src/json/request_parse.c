/* al_request_from_json: the strict reading of a request (docs/contract.md).
 * Every failure is AL_ERR_INVALID_REQUEST with the field path as reason;
 * values are never echoed because they may be secrets or attacker text. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <airlock/json.h>

#include "bundle/bundle.h"
#include "json/field_codec.h"
#include "json/build_json.h"
#include "json/limits_table.h"
#include "json/request_fields.h"
#include "json/syntax.h"
#include "json/toolbelt_json.h"

#define PATH_MAX_TEXT 64 /* "files[255].content_b64" and the like */

static int oom(const jf_ctx *c, const char *path)
{
	return al_error_set(c->err, AL_ERR_INTERNAL, ENOMEM, path,
			    "out of memory");
}

static int dup_string(const jf_ctx *c, const char *path, const char *s,
		      char **out)
{
	*out = strdup(s);
	return *out != NULL ? 0 : oom(c, path);
}

/* Reads a required-or-optional member that must be an array of at most
 * max items; *arr is NULL when absent. */
static int get_array(const jf_ctx *c, const json_t *obj, const char *key,
		     size_t max, const json_t **arr)
{
	*arr = json_object_get(obj, key);
	if (*arr == NULL)
		return 0;
	if (!json_is_array(*arr))
		return jf_fail(c, key, "must be an array");
	if (json_array_size(*arr) > max)
		return jf_fail(c, key, "has more than %zu items", max);
	return 0;
}

static int get_object(const jf_ctx *c, const json_t *obj, const char *key,
		      const json_t **out)
{
	*out = json_object_get(obj, key);
	if (*out != NULL && !json_is_object(*out))
		return jf_fail(c, key, "must be an object");
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_env(const void *a, const void *b)
{
	return strcmp(((const al_env_var *)a)->name,
		      ((const al_env_var *)b)->name);
}

static int cmp_toolchain(const void *a, const void *b)
{
	return strcmp(((const al_toolchain_req *)a)->toolchain,
		      ((const al_toolchain_req *)b)->toolchain);
}

static int parse_language_and_code(const jf_ctx *c, const json_t *root,
				   al_request *req)
{
	const char *s;
	size_t n;
	const char *why;
	const json_t *v = json_object_get(root, "language");
	if (v == NULL)
		return jf_fail(c, "language", "is required");
	int rc = jf_string(c, v, "language", AL_MAX_TOKEN_BYTES, JF_NONEMPTY,
			   &s, &n);
	if (rc < 0)
		return rc;
	if ((why = al_syntax_token(s, n)) != NULL)
		return jf_fail(c, "language", "%s", why);
	if ((rc = dup_string(c, "language", s, &req->language)) < 0)
		return rc;

	v = json_object_get(root, "code");
	if (v == NULL)
		return jf_fail(c, "code", "is required (or exec instead)");
	if ((rc = jf_string(c, v, "code", AL_MAX_CODE_BYTES, 0, &s, &n)) < 0)
		return rc;
	unsigned char *code = malloc(n + 1);
	if (code == NULL)
		return oom(c, "code");
	memcpy(code, s, n + 1);
	free(req->code.data);
	req->code.data = code;
	req->code.len = n;

	v = json_object_get(root, "code_sha256");
	if (v == NULL || json_is_null(v))
		return 0;
	if ((rc = jf_string(c, v, "code_sha256", 64, 0, &s, &n)) < 0)
		return rc;
	if (!al_syntax_sha256(s, n))
		return jf_fail(c, "code_sha256",
			       "must be 64 lower-case hex digits");
	char actual[65];
	al_sha256_hex(req->code.data, req->code.len, actual);
	if (strcmp(actual, s) != 0)
		return jf_fail(c, "code_sha256",
			       "does not match the SHA-256 of code");
	return dup_string(c, "code_sha256", s, &req->code_sha256);
}

static int parse_argv(const jf_ctx *c, const json_t *root, al_request *req)
{
	const json_t *arr;
	int rc = get_array(c, root, "argv", AL_MAX_ARGS, &arr);
	if (rc < 0 || arr == NULL || json_array_size(arr) == 0)
		return rc;
	size_t n = json_array_size(arr);
	req->argv = calloc(n + 1, sizeof(*req->argv));
	if (req->argv == NULL)
		return oom(c, "argv");
	req->argc = n;
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX_TEXT];
		const char *s;
		snprintf(path, sizeof(path), "argv[%zu]", i);
		rc = jf_string(c, json_array_get(arr, i), path,
			       AL_MAX_ARG_BYTES, 0, &s, NULL);
		if (rc < 0 || (rc = dup_string(c, path, s, &req->argv[i])) < 0)
			return rc;
	}
	return 0;
}

static const char *const file_keys[] = {"path", "content", "content_b64",
					"mode", NULL};

static int parse_file(const jf_ctx *c, const json_t *fo, size_t i,
		      al_file *f)
{
	char path[PATH_MAX_TEXT], p_path[PATH_MAX_TEXT], p_text[PATH_MAX_TEXT];
	char p_b64[PATH_MAX_TEXT], p_mode[PATH_MAX_TEXT];
	snprintf(path, sizeof(path), "files[%zu]", i);
	snprintf(p_path, sizeof(p_path), "files[%zu].path", i);
	snprintf(p_text, sizeof(p_text), "files[%zu].content", i);
	snprintf(p_b64, sizeof(p_b64), "files[%zu].content_b64", i);
	snprintf(p_mode, sizeof(p_mode), "files[%zu].mode", i);
	const char *s;
	size_t n;
	const char *why;
	int rc;

	if (!json_is_object(fo))
		return jf_fail(c, path, "must be an object");
	if ((rc = jf_only_keys(c, fo, path, file_keys)) < 0)
		return rc;
	const json_t *v = json_object_get(fo, "path");
	if (v == NULL)
		return jf_fail(c, p_path, "is required");
	rc = jf_string(c, v, p_path, AL_MAX_FILE_PATH_BYTES, 0, &s, &n);
	if (rc < 0)
		return rc;
	if ((why = al_syntax_path(s, n, false)) != NULL)
		return jf_fail(c, p_path, "%s", why);
	if ((rc = dup_string(c, p_path, s, &f->path)) < 0)
		return rc;

	bool present;
	rc = jf_bytes(c, fo, "content", "content_b64", p_text, p_b64,
		      AL_MAX_FILES_TOTAL_BYTES, &f->content, &present);
	if (rc < 0)
		return rc;
	if (!present)
		return jf_fail(c, p_text, "or content_b64 is required");

	f->mode = 0644;
	v = json_object_get(fo, "mode");
	if (v != NULL) {
		if ((rc = jf_string(c, v, p_mode, 8, 0, &s, &n)) < 0)
			return rc;
		if ((why = al_syntax_mode(s, n, &f->mode)) != NULL)
			return jf_fail(c, p_mode, "%s", why);
	}
	return 0;
}

static int parse_files(const jf_ctx *c, const json_t *root, al_request *req)
{
	const json_t *arr;
	int rc = get_array(c, root, "files", AL_MAX_FILES, &arr);
	if (rc < 0 || arr == NULL || json_array_size(arr) == 0)
		return rc;
	size_t n = json_array_size(arr);
	req->files = calloc(n, sizeof(*req->files));
	if (req->files == NULL)
		return oom(c, "files");
	req->n_files = n;
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		if ((rc = parse_file(c, json_array_get(arr, i), i,
				     &req->files[i])) < 0)
			return rc;
		total += req->files[i].content.len;
		if (total > AL_MAX_FILES_TOTAL_BYTES)
			return jf_fail(c, "files",
				       "hold more than %u bytes in total",
				       AL_MAX_FILES_TOTAL_BYTES);
		for (size_t j = 0; j < i; j++) {
			if (al_bundle_paths_collide(req->files[j].path,
					  req->files[i].path)) {
				char path[PATH_MAX_TEXT];
				snprintf(path, sizeof(path), "files[%zu].path",
					 i);
				return jf_fail(c, path,
					       "repeats or nests in another "
					       "file's path");
			}
		}
	}
	return 0;
}

static int parse_outputs(const jf_ctx *c, const json_t *root, al_request *req)
{
	const json_t *arr;
	int rc = get_array(c, root, "outputs", AL_MAX_OUTPUTS, &arr);
	if (rc < 0 || arr == NULL || json_array_size(arr) == 0)
		return rc;
	size_t n = json_array_size(arr);
	req->outputs = calloc(n + 1, sizeof(*req->outputs));
	if (req->outputs == NULL)
		return oom(c, "outputs");
	req->n_outputs = n;
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX_TEXT];
		const char *s;
		size_t len;
		const char *why;
		snprintf(path, sizeof(path), "outputs[%zu]", i);
		rc = jf_string(c, json_array_get(arr, i), path,
			       AL_MAX_FILE_PATH_BYTES, 0, &s, &len);
		if (rc < 0)
			return rc;
		if ((why = al_syntax_path(s, len, true)) != NULL)
			return jf_fail(c, path, "%s", why);
		for (size_t j = 0; j < i; j++)
			if (strcmp(req->outputs[j], s) == 0)
				return jf_fail(c, path, "is listed twice");
		if ((rc = dup_string(c, path, s, &req->outputs[i])) < 0)
			return rc;
	}
	return 0;
}

static const char *const limit_keys[] = {
	"wall_ms",    "cpu_ms",		 "memory_bytes", "pids", "output_bytes",
	"file_bytes", "workspace_bytes", "open_files",	 "socket_bytes", "build",
	"stack_bytes", NULL};

static int parse_limits(const jf_ctx *c, const json_t *root, al_request *req)
{
	const json_t *obj;
	int rc = get_object(c, root, "limits", &obj);
	if (rc < 0 || obj == NULL)
		return rc;
	if ((rc = jf_only_keys(c, obj, "limits", limit_keys)) < 0)
		return rc;
	for (const al_limit_row *row = al_limit_rows; row->bit != 0; row++) {
		const json_t *v = json_object_get(obj, row->name);
		if (v == NULL)
			continue;
		char path[PATH_MAX_TEXT];
		snprintf(path, sizeof(path), "limits.%s", row->name);
		uint64_t value;
		if ((rc = jf_uint(c, v, path, 1, row->max, &value)) < 0)
			return rc;
		*al_limit_slot(&req->limits, row->bit) = value;
		req->limits.set |= row->bit;
	}
	return 0;
}

static const char *const grant_keys[] = {"network",   "workspace",
					 "secrets",   "streaming",
					 "toolbelt",  "operations", NULL};

static int parse_secrets(const jf_ctx *c, const json_t *grant,
			 al_request *req)
{
	const json_t *arr = json_object_get(grant, "secrets");
	if (arr == NULL)
		return 0;
	if (!json_is_array(arr))
		return jf_fail(c, "grant.secrets", "must be an array");
	size_t n = json_array_size(arr);
	if (n > AL_MAX_SECRETS)
		return jf_fail(c, "grant.secrets", "has more than %u items",
			       AL_MAX_SECRETS);
	if (n == 0)
		return 0;
	req->grant.secrets = calloc(n + 1, sizeof(char *));
	if (req->grant.secrets == NULL)
		return oom(c, "grant.secrets");
	req->grant.n_secrets = n;
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX_TEXT];
		const char *s;
		size_t len;
		const char *why;
		int rc;
		snprintf(path, sizeof(path), "grant.secrets[%zu]", i);
		rc = jf_string(c, json_array_get(arr, i), path,
			       AL_MAX_ENV_NAME_BYTES, 0, &s, &len);
		if (rc < 0)
			return rc;
		if ((why = al_syntax_secret_name(s, len)) != NULL)
			return jf_fail(c, path, "%s", why);
		if (al_secret_name_reserved(s))
			return jf_fail(c, path, "names a reserved variable "
					       "(PATH, HOME, TMPDIR, LANG, "
					       "AIRLOCK_*, LD_*)");
		for (size_t j = 0; j < i; j++)
			if (strcmp(req->grant.secrets[j], s) == 0)
				return jf_fail(c, path, "is listed twice");
		if ((rc = dup_string(c, path, s, &req->grant.secrets[i])) < 0)
			return rc;
	}
	/* Order carries no meaning; sorted, equal grants print equally. */
	qsort(req->grant.secrets, n, sizeof(char *), cmp_str);
	return 0;
}

static int parse_grant(const jf_ctx *c, const json_t *root, al_request *req)
{
	const json_t *obj;
	const char *s;
	int rc = get_object(c, root, "grant", &obj);
	if (rc < 0 || obj == NULL)
		return rc;
	if ((rc = jf_only_keys(c, obj, "grant", grant_keys)) < 0)
		return rc;
	const json_t *v = json_object_get(obj, "network");
	if (v != NULL) {
		if ((rc = jf_string(c, v, "grant.network", 32, 0, &s, NULL)) < 0)
			return rc;
		if (al_network_from_name(s, &req->grant.network) < 0)
			return jf_fail(c, "grant.network",
				       "must be none, loopback or host");
	}
	v = json_object_get(obj, "workspace");
	if (v != NULL) {
		rc = jf_string(c, v, "grant.workspace", 32, 0, &s, NULL);
		if (rc < 0)
			return rc;
		if (al_workspace_mode_from_name(s, &req->grant.workspace) < 0)
			return jf_fail(c, "grant.workspace",
				       "must be none, ro or rw");
	}
	v = json_object_get(obj, "streaming");
	if (v != NULL &&
	    (rc = jf_bool(c, v, "grant.streaming", &req->grant.streaming)) < 0)
		return rc;
	if ((rc = al_toolbelt_grant_parse(c, obj, &req->grant)) < 0)
		return rc;
	return parse_secrets(c, obj, req);
}

/* Env names are request data, so every env failure has the reason "env"
 * and the message never says which name. */
static int parse_env(const jf_ctx *c, const json_t *root, al_request *req)
{
	const json_t *obj;
	int rc = get_object(c, root, "env", &obj);
	if (rc < 0 || obj == NULL || json_object_size(obj) == 0)
		return rc;
	size_t n = json_object_size(obj);
	if (n > AL_MAX_ENV)
		return jf_fail(c, "env", "has more than %u variables",
			       AL_MAX_ENV);
	req->env = calloc(n, sizeof(*req->env));
	if (req->env == NULL)
		return oom(c, "env");
	req->n_env = n;
	size_t i = 0;
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)obj, key, v) {
		const char *why = al_syntax_env_name(key, strlen(key));
		const char *s;
		if (why != NULL)
			return jf_fail(c, "env", "has a name that %s", why);
		if (al_env_name_reserved(key))
			return jf_fail(c, "env",
				       "sets a reserved name (PATH, HOME, "
				       "TMPDIR, LANG, AIRLOCK_*, LD_*)");
		if (!json_is_string(v))
			return jf_fail(c, "env", "values must be strings");
		if (json_string_length(v) > AL_MAX_ENV_VALUE_BYTES)
			return jf_fail(c, "env",
				       "has a value longer than %u bytes",
				       AL_MAX_ENV_VALUE_BYTES);
		s = json_string_value(v);
		if (memchr(s, '\0', json_string_length(v)) != NULL)
			return jf_fail(c, "env",
				       "has a value with a NUL byte");
		if ((rc = dup_string(c, "env", key, &req->env[i].name)) < 0 ||
		    (rc = dup_string(c, "env", s, &req->env[i].value)) < 0)
			return rc;
		i++;
	}
	qsort(req->env, n, sizeof(*req->env), cmp_env);
	return 0;
}

static int parse_toolchain(const jf_ctx *c, const json_t *root,
			   al_request *req)
{
	const json_t *obj;
	int rc = get_object(c, root, "toolchain", &obj);
	if (rc < 0 || obj == NULL || json_object_size(obj) == 0)
		return rc;
	size_t n = json_object_size(obj);
	if (n > AL_MAX_TOOLCHAIN)
		return jf_fail(c, "toolchain", "has more than %u entries",
			       AL_MAX_TOOLCHAIN);
	req->toolchain = calloc(n, sizeof(*req->toolchain));
	if (req->toolchain == NULL)
		return oom(c, "toolchain");
	req->n_toolchain = n;
	size_t i = 0;
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)obj, key, v) {
		const char *why = al_syntax_token(key, strlen(key));
		const char *s;
		size_t len;
		if (why != NULL)
			return jf_fail(c, "toolchain", "has an id that %s", why);
		if (!json_is_string(v))
			return jf_fail(c, "toolchain",
				       "constraints must be strings");
		s = json_string_value(v);
		len = json_string_length(v);
		if (memchr(s, '\0', len) != NULL)
			return jf_fail(c, "toolchain",
				       "has a constraint with a NUL byte");
		if ((why = al_syntax_constraint(s, len)) != NULL)
			return jf_fail(c, "toolchain",
				       "has a constraint that %s", why);
		if ((rc = dup_string(c, "toolchain", key,
				     &req->toolchain[i].toolchain)) < 0 ||
		    (rc = dup_string(c, "toolchain", s,
				     &req->toolchain[i].constraint)) < 0)
			return rc;
		i++;
	}
	qsort(req->toolchain, n, sizeof(*req->toolchain), cmp_toolchain);
	return 0;
}

static int parse_scalars(const jf_ctx *c, const json_t *root, al_request *req)
{
	const char *s;
	size_t n;
	int rc;
	const json_t *v = json_object_get(root, "purpose");
	if (v != NULL) {
		if ((rc = jf_string(c, v, "purpose", 32, 0, &s, NULL)) < 0)
			return rc;
		if (al_purpose_from_name(s, &req->purpose) < 0)
			return jf_fail(c, "purpose",
				       "must be script, plugin or asset");
	}
	v = json_object_get(root, "isolation");
	if (v != NULL) {
		if ((rc = jf_string(c, v, "isolation", 32, 0, &s, NULL)) < 0)
			return rc;
		if (al_isolation_from_name(s, &req->isolation) < 0)
			return jf_fail(c, "isolation",
				       "must be required or preferred");
	}
	v = json_object_get(root, "idempotency_key");
	if (v != NULL && !json_is_null(v)) {
		rc = jf_string(c, v, "idempotency_key", AL_MAX_KEY_BYTES,
			       JF_NONEMPTY, &s, &n);
		if (rc < 0)
			return rc;
		if (!al_syntax_printable(s, n, AL_MAX_KEY_BYTES))
			return jf_fail(c, "idempotency_key",
				       "must be printable ASCII");
		if ((rc = dup_string(c, "idempotency_key", s,
				     &req->idempotency_key)) < 0)
			return rc;
	}
	v = json_object_get(root, "image");
	if (v != NULL && !json_is_null(v)) {
		/* a name, never a path: [a-z0-9._-], not starting with . or - */
		rc = jf_string(c, v, "image", 64, JF_NONEMPTY, &s, &n);
		if (rc < 0)
			return rc;
		for (size_t i = 0; i < n; i++)
			if (!((s[i] >= 'a' && s[i] <= 'z') ||
			      (s[i] >= '0' && s[i] <= '9') ||
			      (i > 0 && (s[i] == '.' || s[i] == '_' ||
					 s[i] == '-'))))
				return jf_fail(c, "image",
					       "must be an image name "
					       "([a-z0-9._-]), not a path");
		if ((rc = dup_string(c, "image", s, &req->image)) < 0)
			return rc;
	}
	return jf_bytes(c, root, "stdin", "stdin_b64", "stdin", "stdin_b64",
			AL_MAX_STDIN_BYTES, &req->stdin_data, &req->has_stdin);
}

static const char *const top_keys[] = {
	"language", "code",   "code_sha256",	 "argv",      "stdin",
	"stdin_b64", "files", "outputs",	 "purpose",   "limits",
	"grant",    "env",    "idempotency_key", "isolation", "toolchain",
	"name",	    "exec",   "continues",	 "build_flags", "tests", "compare",
	"image",    NULL};

int al_request_from_json(const char *json, size_t len, al_request **out,
			 al_error **err)
{
	const jf_ctx c = {err, AL_ERR_INVALID_REQUEST};
	json_t *root = NULL;
	al_request *req = NULL;
	int rc;

	*out = NULL;
	if ((rc = jf_load(&c, json, len, AL_MAX_REQUEST_BYTES, &root)) < 0)
		return al_error_wrap(err, rc, NULL);
	req = al_request_new();
	if (req == NULL) {
		rc = oom(&c, "body");
		goto out;
	}
	if ((rc = jf_only_keys(&c, root, "request", top_keys)) < 0 ||
	    (rc = al_request_parse_exec(&c, root, req)) < 0 ||
	    (req->exec == NULL &&
	     (rc = parse_language_and_code(&c, root, req)) < 0) ||
	    (rc = parse_scalars(&c, root, req)) < 0 ||
	    (rc = parse_argv(&c, root, req)) < 0 ||
	    (rc = parse_files(&c, root, req)) < 0 ||
	    (rc = parse_outputs(&c, root, req)) < 0 ||
	    (rc = parse_limits(&c, root, req)) < 0 ||
	    (rc = parse_grant(&c, root, req)) < 0 ||
	    (rc = parse_env(&c, root, req)) < 0 ||
	    (rc = parse_toolchain(&c, root, req)) < 0 ||
	    (rc = al_request_parse_name(&c, root, req)) < 0 ||
	    (rc = al_request_parse_continues(&c, root, req)) < 0 ||
	    (rc = al_build_request_parse(&c, root, req)) < 0)
		goto out;
	al_limits_apply_defaults(&req->limits);
	*out = req;
	req = NULL;
	rc = 0;
out:
	al_request_free(req);
	json_decref(root);
	return al_error_wrap(err, rc, NULL);
}
