/* The JSON form of provider facts (docs/contract.md, "Facts"). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <airlock/json.h>

#include "json/contract_json.h"
#include "json/field_codec.h"
#include "json/limits_table.h"
#include "json/toolbelt_json.h"

#define MAX_FACT_LANGUAGES 64u
#define MAX_FACT_TEXT 4096u /* versions, paths, reasons */

static const char *const axis_keys[] = {
	"process_contained", "host_filesystem_restricted",
	"privilege_escalation_blocked", "syscalls_restricted",
	"network_restricted", NULL};

static bool *axis_slot(al_isolation_axes *a, size_t i)
{
	switch (i) {
	case 0:
		return &a->process_contained;
	case 1:
		return &a->host_filesystem_restricted;
	case 2:
		return &a->privilege_escalation_blocked;
	case 3:
		return &a->syscalls_restricted;
	default:
		return &a->network_restricted;
	}
}

json_t *al_isolation_to_json(const al_isolation_axes *axes)
{
	al_isolation_axes copy = *axes;
	json_t *o = json_object();
	for (size_t i = 0; o != NULL && axis_keys[i] != NULL; i++) {
		if (jf_set(o, axis_keys[i],
			   json_boolean(*axis_slot(&copy, i))) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

int al_isolation_from_json(const jf_ctx *c, const json_t *v, const char *path,
			   al_isolation_axes *axes)
{
	char p[96];
	int rc;
	if (!json_is_object(v))
		return jf_fail(c, path, "must be an object");
	if ((rc = jf_only_keys(c, v, path, axis_keys)) < 0)
		return rc;
	memset(axes, 0, sizeof(*axes));
	for (size_t i = 0; axis_keys[i] != NULL; i++) {
		const json_t *b = json_object_get(v, axis_keys[i]);
		if (b == NULL)
			continue;
		snprintf(p, sizeof(p), "%s.%s", path, axis_keys[i]);
		if ((rc = jf_bool(c, b, p, axis_slot(axes, i))) < 0)
			return rc;
	}
	return 0;
}

int al_safety_from_json(const jf_ctx *c, const json_t *v, const char *path,
			al_safety_class *out)
{
	const char *s;
	int rc = jf_string(c, v, path, 32, 0, &s, NULL);
	if (rc < 0)
		return rc;
	if (al_safety_class_from_name(s, out) < 0)
		return jf_fail(c, path, "is not a known safety class");
	return 0;
}

/* ---- to JSON ------------------------------------------------------- */

static json_t *languages_json(const al_facts *f)
{
	json_t *arr = json_array();
	for (size_t i = 0; arr != NULL && i < f->n_languages; i++) {
		const al_language_fact *l = &f->languages[i];
		json_t *o = json_object();
		if (o == NULL ||
		    jf_set(o, "language", jf_string_or_null(l->language)) < 0 ||
		    jf_set(o, "toolchain", jf_string_or_null(l->toolchain)) <
			    0 ||
		    jf_set(o, "version", jf_string_or_null(l->version)) < 0 ||
		    jf_set(o, "path", jf_string_or_null(l->path)) < 0) {
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

/* Names of the set bits, in the order of `name_of`'s values. */
static json_t *names_json(unsigned bits, unsigned count,
			  const char *(*name_of)(unsigned))
{
	json_t *arr = json_array();
	for (unsigned i = 0; arr != NULL && i < count; i++) {
		if (!(bits & (1u << i)))
			continue;
		const char *name = name_of(i);
		if (name == NULL ||
		    json_array_append_new(arr, json_string(name)) < 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* every bit of AL_LIMIT__ALL, in the table's order */
#define LIMIT_COUNT ((unsigned)__builtin_popcount(AL_LIMIT__ALL))

static const char *limit_name_at(unsigned i)
{
	return al_limit_name(1u << i);
}
static const char *network_name_at(unsigned i)
{
	return al_network_name((al_network)i);
}
static const char *workspace_name_at(unsigned i)
{
	return al_workspace_mode_name((al_workspace_mode)i);
}

/* The stored mechanism text as an object; null when absent or invalid so
 * one bad probe string cannot make the whole facts unprintable. */
static json_t *mechanism_json(const char *text)
{
	if (text == NULL)
		return json_null();
	json_t *m = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	if (m != NULL && json_is_object(m))
		return m;
	json_decref(m);
	return json_null();
}

static json_t *facts_value(const al_facts *f)
{
	json_t *o = json_object();
	if (o == NULL ||
	    jf_set(o, "provider", jf_string_or_null(f->provider)) < 0 ||
	    jf_set(o, "available", json_boolean(f->available)) < 0 ||
	    jf_set(o, "unavailable_reason",
		   jf_string_or_null(f->unavailable_reason)) < 0 ||
	    jf_set(o, "safety_class",
		   jf_string_or_null(al_safety_class_name(f->safety_class))) <
		    0 ||
	    jf_set(o, "isolation", al_isolation_to_json(&f->isolation)) < 0 ||
	    jf_set(o, "languages", languages_json(f)) < 0 ||
	    jf_set(o, "limits",
		   names_json(f->limits, LIMIT_COUNT, limit_name_at)) < 0 ||
	    jf_set(o, "network", names_json(f->network, 3, network_name_at)) <
		    0 ||
	    jf_set(o, "workspace",
		   names_json(f->workspace, 3, workspace_name_at)) < 0 ||
	    jf_set(o, "streaming", json_boolean(f->streaming)) < 0 ||
	    jf_set(o, "exec", json_boolean(f->exec)) < 0 ||
	    jf_set(o, "mechanism", mechanism_json(f->mechanism_json)) < 0 ||
	    al_toolbelt_facts_emit(o, f) < 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

char *al_facts_to_json(const al_facts *facts, int pretty)
{
	json_t *o = facts_value(facts);
	if (o == NULL)
		return NULL;
	char *text = jf_dump(o, pretty ? JSON_INDENT(2) : JSON_COMPACT);
	json_decref(o);
	return text;
}

/* ---- from JSON ----------------------------------------------------- */

static int oom(const jf_ctx *c, const char *path)
{
	return al_error_set(c->err, AL_ERR_INTERNAL, ENOMEM, path,
			    "out of memory");
}

/* A string or null; *s is NULL for null. */
static int opt_string(const jf_ctx *c, const json_t *v, const char *path,
		      size_t max, const char **s)
{
	*s = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	return jf_string(c, v, path, max, 0, s, NULL);
}

static const char *const language_keys[] = {"language", "toolchain",
					    "version", "path", NULL};

static int parse_languages(const jf_ctx *c, const json_t *arr, al_facts *f)
{
	if (!json_is_array(arr))
		return jf_fail(c, "languages", "must be an array");
	if (json_array_size(arr) > MAX_FACT_LANGUAGES)
		return jf_fail(c, "languages", "has more than %u items",
			       MAX_FACT_LANGUAGES);
	size_t i;
	const json_t *lo;
	json_array_foreach(arr, i, lo) {
		char p[64], pl[64], pt[64], pv[64], pp[64];
		const char *lang, *tc, *ver, *path;
		int rc;
		snprintf(p, sizeof(p), "languages[%zu]", i);
		snprintf(pl, sizeof(pl), "languages[%zu].language", i);
		snprintf(pt, sizeof(pt), "languages[%zu].toolchain", i);
		snprintf(pv, sizeof(pv), "languages[%zu].version", i);
		snprintf(pp, sizeof(pp), "languages[%zu].path", i);
		if (!json_is_object(lo))
			return jf_fail(c, p, "must be an object");
		if ((rc = jf_only_keys(c, lo, p, language_keys)) < 0)
			return rc;
		const json_t *v = json_object_get(lo, "language");
		if (v == NULL)
			return jf_fail(c, pl, "is required");
		if ((rc = jf_string(c, v, pl, 32, JF_NONEMPTY, &lang, NULL)) < 0)
			return rc;
		v = json_object_get(lo, "toolchain");
		if (v == NULL)
			return jf_fail(c, pt, "is required");
		if ((rc = jf_string(c, v, pt, 32, JF_NONEMPTY, &tc, NULL)) < 0)
			return rc;
		if ((rc = opt_string(c, json_object_get(lo, "version"), pv,
				     MAX_FACT_TEXT, &ver)) < 0 ||
		    (rc = opt_string(c, json_object_get(lo, "path"), pp,
				     MAX_FACT_TEXT, &path)) < 0)
			return rc;
		if (al_facts_add_language(f, lang, tc, ver, path) < 0)
			return oom(c, p);
	}
	return 0;
}

/* An array of distinct names, each mapped to a bit by `from_name`. */
static int parse_names(const jf_ctx *c, const json_t *arr, const char *key,
		       int (*from_name)(const char *, unsigned *),
		       unsigned *bits)
{
	if (!json_is_array(arr))
		return jf_fail(c, key, "must be an array");
	*bits = 0;
	size_t i;
	const json_t *v;
	json_array_foreach(arr, i, v) {
		char p[64];
		const char *s;
		unsigned bit;
		int rc;
		snprintf(p, sizeof(p), "%s[%zu]", key, i);
		if ((rc = jf_string(c, v, p, 32, 0, &s, NULL)) < 0)
			return rc;
		if (from_name(s, &bit) < 0)
			return jf_fail(c, p, "is not a known name");
		if (*bits & bit)
			return jf_fail(c, p, "is listed twice");
		*bits |= bit;
	}
	return 0;
}

static int network_bit(const char *s, unsigned *bit)
{
	al_network n;
	if (al_network_from_name(s, &n) < 0)
		return -EINVAL;
	*bit = 1u << n;
	return 0;
}

static int workspace_bit(const char *s, unsigned *bit)
{
	al_workspace_mode m;
	if (al_workspace_mode_from_name(s, &m) < 0)
		return -EINVAL;
	*bit = 1u << m;
	return 0;
}

static const char *const facts_keys[] = {
	"provider", "available", "unavailable_reason", "safety_class",
	"isolation", "languages", "limits", "network", "workspace",
	"streaming", "exec", "mechanism", "toolbelt", "inject", "interrupt",
	"host_api", NULL};

static int parse_facts(const jf_ctx *c, const json_t *root, al_facts **out)
{
	const char *s;
	al_safety_class cls;
	int rc;
	al_facts *f = NULL;

	*out = NULL;
	if ((rc = jf_only_keys(c, root, "facts", facts_keys)) < 0)
		return rc;
	const json_t *v = json_object_get(root, "provider");
	if (v == NULL)
		return jf_fail(c, "provider", "is required");
	if ((rc = jf_string(c, v, "provider", 64, JF_NONEMPTY, &s, NULL)) < 0)
		return rc;
	v = json_object_get(root, "safety_class");
	if (v == NULL)
		return jf_fail(c, "safety_class", "is required");
	if ((rc = al_safety_from_json(c, v, "safety_class", &cls)) < 0)
		return rc;
	f = al_facts_new(s, cls);
	if (f == NULL)
		return oom(c, "facts");

	if ((v = json_object_get(root, "available")) == NULL) {
		rc = jf_fail(c, "available", "is required");
		goto fail;
	}
	if ((rc = jf_bool(c, v, "available", &f->available)) < 0 ||
	    (rc = opt_string(c, json_object_get(root, "unavailable_reason"),
			     "unavailable_reason", MAX_FACT_TEXT, &s)) < 0)
		goto fail;
	if (s != NULL && (f->unavailable_reason = strdup(s)) == NULL) {
		rc = oom(c, "unavailable_reason");
		goto fail;
	}
	if ((v = json_object_get(root, "isolation")) != NULL &&
	    (rc = al_isolation_from_json(c, v, "isolation", &f->isolation)) < 0)
		goto fail;
	if ((v = json_object_get(root, "languages")) != NULL &&
	    (rc = parse_languages(c, v, f)) < 0)
		goto fail;
	if ((v = json_object_get(root, "limits")) != NULL &&
	    (rc = parse_names(c, v, "limits", al_limit_from_name,
			      &f->limits)) < 0)
		goto fail;
	if ((v = json_object_get(root, "network")) != NULL &&
	    (rc = parse_names(c, v, "network", network_bit, &f->network)) < 0)
		goto fail;
	if ((v = json_object_get(root, "workspace")) != NULL &&
	    (rc = parse_names(c, v, "workspace", workspace_bit,
			      &f->workspace)) < 0)
		goto fail;
	if ((v = json_object_get(root, "streaming")) != NULL &&
	    (rc = jf_bool(c, v, "streaming", &f->streaming)) < 0)
		goto fail;
	if ((v = json_object_get(root, "exec")) != NULL &&
	    (rc = jf_bool(c, v, "exec", &f->exec)) < 0)
		goto fail;
	v = json_object_get(root, "mechanism");
	if (v != NULL && !json_is_null(v)) {
		if (!json_is_object(v)) {
			rc = jf_fail(c, "mechanism", "must be an object");
			goto fail;
		}
		f->mechanism_json = jf_dump(v, JSON_COMPACT);
		if (f->mechanism_json == NULL) {
			rc = oom(c, "mechanism");
			goto fail;
		}
	}
	if ((rc = al_toolbelt_facts_parse(c, root, f)) < 0)
		goto fail;
	*out = f;
	return 0;
fail:
	al_facts_free(f);
	return rc;
}

int al_facts_from_json(const char *json, size_t len, al_facts **out,
		       al_error **err)
{
	const jf_ctx c = {err, AL_ERR_INVALID_ARGUMENT};
	json_t *root = NULL;
	*out = NULL;
	int rc = jf_load(&c, json, len, AL_MAX_REQUEST_BYTES, &root);
	if (rc < 0)
		return rc;
	rc = parse_facts(&c, root, out);
	json_decref(root);
	return al_error_wrap(err, rc, NULL);
}
