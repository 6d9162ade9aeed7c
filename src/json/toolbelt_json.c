/* The toolbelt's request and result fields (see toolbelt_json.h). */
#include "json/toolbelt_json.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool/proto.h"

bool al_tool_name_valid(const char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;
	if (n == 0 || n > AL_TOOL_MAX_NAME)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
		      ch == '.' || ch == ':'))
			return false;
	}
	return true;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int al_toolbelt_grant_parse(const jf_ctx *c, const json_t *grant, al_grant *g)
{
	const json_t *v = json_object_get(grant, "toolbelt");
	int rc;
	if (v != NULL && (rc = jf_bool(c, v, "grant.toolbelt", &g->toolbelt)) < 0)
		return rc;
	const json_t *arr = json_object_get(grant, "operations");
	if (arr == NULL)
		return 0;
	if (!json_is_array(arr))
		return jf_fail(c, "grant.operations", "must be an array");
	size_t n = json_array_size(arr);
	if (n > AL_MAX_GRANT_OPERATIONS)
		return jf_fail(c, "grant.operations", "has more than %u items",
			       AL_MAX_GRANT_OPERATIONS);
	if (n == 0)
		return 0;
	if (!g->toolbelt)
		return jf_fail(c, "grant.operations",
			       "needs grant.toolbelt: true");
	if ((g->operations = calloc(n + 1, sizeof(char *))) == NULL)
		return jf_fail(c, "grant.operations", "out of memory");
	for (size_t i = 0; i < n; i++) {
		char path[48];
		const char *s;
		snprintf(path, sizeof(path), "grant.operations[%zu]", i);
		if ((rc = jf_string(c, json_array_get(arr, i), path,
				    AL_TOOL_MAX_NAME, 0, &s, NULL)) < 0)
			return rc;
		if (!al_tool_name_valid(s))
			return jf_fail(c, path,
				       "must be an operation name "
				       "([A-Za-z0-9_.:-]{1,64})");
		for (size_t j = 0; j < i; j++)
			if (strcmp(g->operations[j], s) == 0)
				return jf_fail(c, path, "is listed twice");
		if ((g->operations[i] = strdup(s)) == NULL)
			return jf_fail(c, path, "out of memory");
		g->n_operations = i + 1;
	}
	qsort(g->operations, n, sizeof(char *), cmp_str);
	return 0;
}

int al_toolbelt_grant_emit(json_t *o, const al_grant *g)
{
	if (g->toolbelt && jf_set(o, "toolbelt", json_true()) < 0)
		return -ENOMEM;
	if (g->n_operations == 0)
		return 0;
	json_t *arr = json_array();
	for (size_t i = 0; arr != NULL && i < g->n_operations; i++)
		if (json_array_append_new(arr, json_string(g->operations[i])) <
		    0) {
			json_decref(arr);
			arr = NULL;
		}
	return jf_set(o, "operations", arr) < 0 ? -ENOMEM : 0;
}

int al_toolbelt_grant_dup(const al_grant *src, al_grant *dst)
{
	dst->toolbelt = src->toolbelt;
	if (src->n_operations == 0)
		return 0;
	dst->operations = calloc(src->n_operations + 1, sizeof(char *));
	if (dst->operations == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < src->n_operations; i++) {
		if ((dst->operations[i] = strdup(src->operations[i])) == NULL)
			return -ENOMEM;
		dst->n_operations = i + 1;
	}
	return 0;
}

void al_toolbelt_grant_free(al_grant *g)
{
	for (size_t i = 0; i < g->n_operations; i++)
		free(g->operations[i]);
	free(g->operations);
	g->operations = NULL;
	g->n_operations = 0;
}

/* ---- result ---------------------------------------------------------- */

static const struct {
	const char *key;
	size_t off;
	bool array;
} fields[] = {
	{"events", offsetof(al_result, events_json), true},
	{"declaration", offsetof(al_result, declaration_json), false},
	{"host_calls", offsetof(al_result, host_calls_json), true},
};

#define FIELD(r, i) ((char **)((char *)(r) + fields[i].off))

int al_toolbelt_result_emit(json_t *o, const al_result *r)
{
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const char *text = *FIELD(r, i);
		if (text == NULL)
			continue;
		json_t *v = json_loads(text, 0, NULL);
		if (v == NULL || jf_set(o, fields[i].key, v) < 0)
			return -ENOMEM;
	}
	return 0;
}

int al_toolbelt_result_parse(const jf_ctx *c, const json_t *root, al_result *r)
{
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const json_t *v = json_object_get(root, fields[i].key);
		if (v == NULL)
			continue;
		if (fields[i].array ? !json_is_array(v) : !json_is_object(v))
			return jf_fail(c, fields[i].key, "must be an %s",
				       fields[i].array ? "array" : "object");
		char *text = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
		if (text == NULL)
			return jf_fail(c, fields[i].key, "out of memory");
		free(*FIELD(r, i));
		*FIELD(r, i) = text;
	}
	return 0;
}

void al_toolbelt_result_free(al_result *r)
{
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		free(*FIELD(r, i));
		*FIELD(r, i) = NULL;
	}
}

/* ---- facts ----------------------------------------------------------- */

int al_toolbelt_facts_emit(json_t *o, const al_facts *f)
{
	if ((f->toolbelt && jf_set(o, "toolbelt", json_true()) < 0) ||
	    (f->inject && jf_set(o, "inject", json_true()) < 0) ||
	    (f->interrupt && jf_set(o, "interrupt", json_true()) < 0))
		return -ENOMEM;
	if (f->n_host_api == 0)
		return 0;
	json_t *arr = json_array();
	for (size_t i = 0; arr != NULL && i < f->n_host_api; i++)
		if (json_array_append_new(arr, json_string(f->host_api[i])) < 0) {
			json_decref(arr);
			arr = NULL;
		}
	return jf_set(o, "host_api", arr) < 0 ? -ENOMEM : 0;
}

int al_toolbelt_facts_set_host_api(al_facts *f, char *const *names, size_t n)
{
	for (size_t i = 0; i < f->n_host_api; i++)
		free(f->host_api[i]);
	free(f->host_api);
	f->host_api = NULL;
	f->n_host_api = 0;
	if (n == 0)
		return 0;
	if ((f->host_api = calloc(n + 1, sizeof(char *))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if ((f->host_api[i] = strdup(names[i])) == NULL)
			return -ENOMEM;
		f->n_host_api = i + 1;
	}
	return 0;
}

int al_toolbelt_facts_parse(const jf_ctx *c, const json_t *root, al_facts *f)
{
	static const char *const keys[] = {"toolbelt", "inject", "interrupt"};
	bool *dst[] = {&f->toolbelt, &f->inject, &f->interrupt};
	int rc;
	for (size_t i = 0; i < 3; i++) {
		const json_t *v = json_object_get(root, keys[i]);
		if (v != NULL && (rc = jf_bool(c, v, keys[i], dst[i])) < 0)
			return rc;
	}
	const json_t *arr = json_object_get(root, "host_api");
	if (arr == NULL)
		return 0;
	if (!json_is_array(arr) || json_array_size(arr) > AL_MAX_GRANT_OPERATIONS)
		return jf_fail(c, "host_api", "must be an array of names");
	char *names[AL_MAX_GRANT_OPERATIONS];
	size_t n = json_array_size(arr);
	for (size_t i = 0; i < n; i++) {
		const char *s = json_string_value(json_array_get(arr, i));
		if (s == NULL || !al_tool_name_valid(s))
			return jf_fail(c, "host_api", "must be an array of names");
		names[i] = (char *)s;
	}
	if (al_toolbelt_facts_set_host_api(f, names, n) < 0)
		return jf_fail(c, "host_api", "out of memory");
	return 0;
}

int al_toolbelt_facts_copy(const al_facts *src, al_facts *dst)
{
	dst->toolbelt = src->toolbelt;
	dst->inject = src->inject;
	dst->interrupt = src->interrupt;
	return al_toolbelt_facts_set_host_api(dst, src->host_api,
					      src->n_host_api);
}

void al_toolbelt_facts_drop(al_facts *f)
{
	(void)al_toolbelt_facts_set_host_api(f, NULL, 0);
	f->toolbelt = f->inject = f->interrupt = false;
}
