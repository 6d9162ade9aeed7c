/* Host operations in the configuration (see operations.h). */
#include "host/operations.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/toolbelt_json.h"
#include "tool/proto.h"

static int bad(al_error **err, const char *path, const char *name,
	       const char *what)
{
	char p[160];
	snprintf(p, sizeof(p), "%s%s%s", path, name ? "." : "",
		 name ? name : "");
	al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, p,
		     "configuration key %s: %s", p, what);
	return -EINVAL;
}

static bool url_ok(const char *u)
{
	size_t n = strlen(u);
	if (n > AL_OP_MAX_URL ||
	    (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)u[i] <= ' ' || u[i] == 0x7f)
			return false;
	return true;
}

static int get_uint(json_t *o, const char *key, uint64_t def, uint64_t max,
		    uint64_t *out)
{
	json_t *v = json_object_get(o, key);
	if (v == NULL) {
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    (uint64_t)json_integer_value(v) > max)
		return -EINVAL;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int parse_one(const char *path, const char *name, json_t *d,
		     json_t **out, al_error **err)
{
	const char *kind = json_string_value(json_object_get(d, "kind"));
	if (!json_is_object(d) || kind == NULL)
		return bad(err, path, name, "expected an object with a kind");
	if (strcmp(kind, "webhook") == 0) {
		const char *url = json_string_value(json_object_get(d, "url"));
		uint64_t t, m;
		const char *key;
		json_t *v;
		json_object_foreach(d, key, v) {
			if (strcmp(key, "kind") != 0 && strcmp(key, "url") != 0 &&
			    strcmp(key, "timeout_ms") != 0 &&
			    strcmp(key, "max_response_bytes") != 0)
				return bad(err, path, name, "unknown key");
		}
		if (url == NULL || !url_ok(url))
			return bad(err, path, name,
				   "url: expected an http:// or https:// URL");
		if (get_uint(d, "timeout_ms", AL_OP_DEFAULT_TIMEOUT_MS,
			     AL_OP_MAX_TIMEOUT_MS, &t) < 0)
			return bad(err, path, name,
				   "timeout_ms: expected 1..30000");
		if (get_uint(d, "max_response_bytes", AL_TOOL_MAX_CALL_BYTES,
			     AL_TOOL_MAX_CALL_BYTES, &m) < 0)
			return bad(err, path, name,
				   "max_response_bytes: expected 1..65536");
		*out = json_pack("{s:s, s:s, s:I, s:I}", "kind", "webhook",
				 "url", url, "timeout_ms", (json_int_t)t,
				 "max_response_bytes", (json_int_t)m);
	} else if (strcmp(kind, "module") == 0) {
		const char *p = json_string_value(json_object_get(d, "path"));
		json_t *sv = json_object_get(d, "symbol");
		const char *sym = sv != NULL ? json_string_value(sv)
					     : "airlock_operation";
		const char *key;
		json_t *v;
		json_object_foreach(d, key, v) {
			if (strcmp(key, "kind") != 0 && strcmp(key, "path") != 0 &&
			    strcmp(key, "symbol") != 0)
				return bad(err, path, name, "unknown key");
		}
		if (p == NULL || p[0] != '/' || strlen(p) > 4096)
			return bad(err, path, name,
				   "path: expected an absolute path");
		if (sym == NULL || !al_tool_name_valid(sym) ||
		    strchr(sym, ':') != NULL || strchr(sym, '.') != NULL)
			return bad(err, path, name,
				   "symbol: expected a C identifier");
		*out = json_pack("{s:s, s:s, s:s}", "kind", "module", "path",
				 p, "symbol", sym);
	} else {
		return bad(err, path, name, "kind: expected webhook or module");
	}
	return *out != NULL ? 0 : -ENOMEM;
}

int al_operations_parse(json_t *v, const char *path, char **out,
			al_error **err)
{
	*out = NULL;
	if (!json_is_object(v))
		return bad(err, path, NULL, "expected an object");
	if (json_object_size(v) > AL_OP_MAX_OPERATIONS)
		return bad(err, path, NULL, "more than 64 operations");
	json_t *all = json_object();
	const char *name;
	json_t *d;
	int rc = all != NULL ? 0 : -ENOMEM;
	json_object_foreach(v, name, d) {
		json_t *one = NULL;
		if (rc < 0)
			break;
		if (!al_tool_name_valid(name)) {
			rc = bad(err, path, NULL,
				 "an operation name must be "
				 "[A-Za-z0-9_.:-]{1,64}");
			break;
		}
		if ((rc = parse_one(path, name, d, &one, err)) == 0 &&
		    json_object_set_new(all, name, one) < 0)
			rc = -ENOMEM;
	}
	if (rc == 0 &&
	    (*out = json_dumps(all, JSON_COMPACT | JSON_SORT_KEYS)) == NULL)
		rc = -ENOMEM;
	json_decref(all);
	return rc;
}

int al_operations_defined(const char *ops_json, const char *name)
{
	if (ops_json == NULL)
		return 0;
	json_t *all = json_loads(ops_json, 0, NULL);
	int found = json_object_get(all, name) != NULL;
	json_decref(all);
	return found;
}

int al_operations_subset(const char *ops_json, const al_grant *g, char **out)
{
	*out = NULL;
	if (g->n_operations == 0 || ops_json == NULL)
		return 0;
	json_t *all = json_loads(ops_json, 0, NULL);
	json_t *sub = json_object();
	int rc = all != NULL && sub != NULL ? 0 : -ENOMEM;
	for (size_t i = 0; rc == 0 && i < g->n_operations; i++) {
		json_t *d = json_object_get(all, g->operations[i]);
		if (d != NULL &&
		    json_object_set(sub, g->operations[i], d) < 0)
			rc = -ENOMEM;
	}
	if (rc == 0 &&
	    (*out = json_dumps(sub, JSON_COMPACT | JSON_SORT_KEYS)) == NULL)
		rc = -ENOMEM;
	json_decref(sub);
	json_decref(all);
	return rc;
}
