/* The configuration file: one JSON object, parsed strictly (unknown keys,
 * wrong types and bad values fail with AL_ERR_INVALID_CONFIG whose reason is
 * the key path; values are never echoed).  docs/configuration.md documents
 * every key. */
#include "host/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "host/config_env.h"
#include "host/env_policy.h"
#include "host/operations.h"
#include "json/toolbelt_json.h"
#include "json/syntax.h"

#define PATH_MAX_LEN 512

/* Key paths are built into a fixed buffer; a config nested deeper than this
 * is refused anyway. */
typedef struct kpath {
	char buf[PATH_MAX_LEN];
} kpath;

/* Appends s to out at *len, truncating (paths that long are refused
 * anyway, by the keys' own length checks). */
static void kp_put(kpath *out, size_t *len, const char *s)
{
	size_t n = strlen(s);
	if (n > sizeof(out->buf) - 1 - *len)
		n = sizeof(out->buf) - 1 - *len;
	memcpy(out->buf + *len, s, n);
	*len += n;
	out->buf[*len] = '\0';
}

static void kp_join(kpath *out, const char *parent, const char *key)
{
	size_t len = 0;
	char p[PATH_MAX_LEN];
	snprintf(p, sizeof(p), "%s", parent ? parent : "");
	out->buf[0] = '\0';
	kp_put(out, &len, p);
	if (p[0])
		kp_put(out, &len, ".");
	kp_put(out, &len, key);
}

static void kp_index(kpath *out, const char *parent, size_t i)
{
	char idx[32];
	size_t len = 0;
	char p[PATH_MAX_LEN];
	snprintf(p, sizeof(p), "%s", parent);
	snprintf(idx, sizeof(idx), "[%zu]", i);
	out->buf[0] = '\0';
	kp_put(out, &len, p);
	kp_put(out, &len, idx);
}

static int bad(al_error **err, const char *path, const char *what)
{
	al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, path,
		     "configuration key %s: %s", path, what);
	return -EINVAL;
}

static int oom(al_error **err)
{
	al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL, "out of memory");
	return -ENOMEM;
}

uint64_t *al_limits_field(al_limits *l, unsigned bit)
{
	switch (bit) {
	case AL_LIMIT_WALL_MS: return &l->wall_ms;
	case AL_LIMIT_CPU_MS: return &l->cpu_ms;
	case AL_LIMIT_MEMORY_BYTES: return &l->memory_bytes;
	case AL_LIMIT_PIDS: return &l->pids;
	case AL_LIMIT_OUTPUT_BYTES: return &l->output_bytes;
	case AL_LIMIT_FILE_BYTES: return &l->file_bytes;
	case AL_LIMIT_WORKSPACE_BYTES: return &l->workspace_bytes;
	case AL_LIMIT_OPEN_FILES: return &l->open_files;
	case AL_LIMIT_SOCKET_BYTES: return &l->socket_bytes;
	case AL_LIMIT_STACK_BYTES: return &l->stack_bytes;
	default: return NULL;
	}
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void grant_free(al_cfg_grant *g)
{
	free_strv(g->secrets, g->n_secrets);
	g->secrets = NULL;
	g->n_secrets = 0;
	free_strv(g->operations, g->n_operations);
	g->operations = NULL;
	g->n_operations = 0;
}

void al_config_free(al_config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < cfg->n_candidates; i++) {
		free(cfg->candidates[i].provider);
		free(cfg->candidates[i].config_json);
		free(cfg->candidates[i].module);
	}
	free(cfg->candidates);
	for (size_t i = 0; i < cfg->n_tenants; i++) {
		al_cfg_tenant *t = &cfg->tenants[i];
		free(t->name);
		free_strv(t->languages, t->n_languages);
		free_strv(t->images, t->n_images);
		grant_free(&t->grant);
		for (size_t j = 0; j < t->n_pins; j++) {
			grant_free(&t->pins[j].grant);
			free(t->pins[j].language);
		}
		free(t->pins);
		free_strv(t->env_allow, t->n_env_allow);
		free(t->operations_json);
		al_cfg_env_free(t);
	}
	free(cfg->tenants);
	free_strv(cfg->acknowledged, cfg->n_acknowledged);
	free(cfg->require_provider);
	free(cfg->state_dir);
	free(cfg->secrets_path);
	free(cfg->source);
	free(cfg);
}

/* ---- value helpers -------------------------------------------------- */

static int get_bool(json_t *v, const char *path, bool *out, al_error **err)
{
	if (!json_is_boolean(v))
		return bad(err, path, "expected true or false");
	*out = json_is_true(v);
	return 0;
}

static int get_uint(json_t *v, const char *path, uint64_t min, uint64_t *out,
		    al_error **err)
{
	if (!json_is_integer(v))
		return bad(err, path, "expected an integer");
	json_int_t i = json_integer_value(v);
	if (i < 0 || (uint64_t)i < min)
		return bad(err, path, "integer out of range");
	*out = (uint64_t)i;
	return 0;
}

static int get_str(json_t *v, const char *path, size_t maxlen, char **out,
		   al_error **err)
{
	if (!json_is_string(v))
		return bad(err, path, "expected a string");
	size_t len = json_string_length(v);
	const char *s = json_string_value(v);
	if (len == 0 || len > maxlen || strlen(s) != len)
		return bad(err, path, "empty, too long or holds a NUL");
	*out = strdup(s);
	if (!*out)
		return oom(err);
	return 0;
}

/* Names used as identifiers (tenants, providers, languages). */
static bool ident_ok(const char *s)
{
	if (!s)
		return false;
	size_t n = strlen(s);
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		      c == '.'))
			return false;
	}
	return true;
}

/* Secret names (the variable each becomes is checked per tenant,
 * host/config_env.c). */
static bool secret_name_ok(const char *s)
{
	return al_syntax_secret_name(s, strlen(s)) == NULL;
}

static bool hex64_ok(const char *s)
{
	if (strlen(s) != 64)
		return false;
	for (size_t i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static int get_strv(json_t *v, const char *path, bool (*ok)(const char *),
		    char ***out, size_t *n, al_error **err)
{
	if (!json_is_array(v))
		return bad(err, path, "expected an array of strings");
	size_t count = json_array_size(v);
	char **arr = calloc(count + 1, sizeof(*arr));
	if (!arr)
		return oom(err);
	for (size_t i = 0; i < count; i++) {
		kpath kp;
		kp_index(&kp, path, i);
		int rc = get_str(json_array_get(v, i), kp.buf, 256, &arr[i],
				 err);
		if (rc == 0 && ok && !ok(arr[i]))
			rc = bad(err, kp.buf, "not a valid name");
		for (size_t j = 0; rc == 0 && j < i; j++)
			if (strcmp(arr[j], arr[i]) == 0)
				rc = bad(err, kp.buf, "duplicate entry");
		if (rc < 0) {
			free_strv(arr, i + 1);
			return rc;
		}
	}
	*out = arr;
	*n = count;
	return 0;
}

/* A list of mode names into a bit set, using a name parser. */
static int get_modes(json_t *v, const char *path,
		     int (*parse)(const char *, unsigned *), unsigned *out,
		     al_error **err)
{
	if (!json_is_array(v))
		return bad(err, path, "expected an array of mode names");
	unsigned bits = 0;
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e) {
		kpath kp;
		kp_index(&kp, path, i);
		unsigned m;
		if (!json_is_string(e) || parse(json_string_value(e), &m) < 0)
			return bad(err, kp.buf, "unknown mode");
		bits |= 1u << m;
	}
	*out = bits;
	return 0;
}

static int parse_network(const char *s, unsigned *m)
{
	al_network n;
	int rc = al_network_from_name(s, &n);
	*m = (unsigned)n;
	return rc;
}

static int parse_workspace(const char *s, unsigned *m)
{
	al_workspace_mode w;
	int rc = al_workspace_mode_from_name(s, &w);
	*m = (unsigned)w;
	return rc;
}

/* Rejects any key of obj not in the NULL-terminated list `known`. */
static int only_keys(json_t *obj, const char *path, const char *const *known,
		     al_error **err)
{
	const char *key;
	json_t *v;
	json_object_foreach(obj, key, v) {
		bool found = false;
		for (size_t i = 0; known[i]; i++)
			if (strcmp(key, known[i]) == 0)
				found = true;
		if (!found) {
			kpath kp;
			/* An unknown key is named by its path; keys are
			 * configuration, not request values. */
			kp_join(&kp, path, ident_ok(key) ? key : "?");
			return bad(err, kp.buf, "unknown key");
		}
	}
	return 0;
}

/* ---- sections ------------------------------------------------------- */

static int parse_grant(json_t *g, const char *path, al_cfg_grant *out,
		       al_error **err)
{
	static const char *const keys[] = {"network",  "workspace",
					   "secrets",  "streaming",
					   "toolbelt", "operations", NULL};
	kpath kp;
	int rc;
	if (!json_is_object(g))
		return bad(err, path, "expected an object");
	if ((rc = only_keys(g, path, keys, err)) < 0)
		return rc;
	out->network = 1u << AL_NETWORK_NONE;
	out->workspace = 1u << AL_WORKSPACE_NONE;
	json_t *v;
	if ((v = json_object_get(g, "network"))) {
		kp_join(&kp, path, "network");
		if ((rc = get_modes(v, kp.buf, parse_network, &out->network,
				    err)) < 0)
			return rc;
	}
	if ((v = json_object_get(g, "workspace"))) {
		kp_join(&kp, path, "workspace");
		if ((rc = get_modes(v, kp.buf, parse_workspace,
				    &out->workspace, err)) < 0)
			return rc;
	}
	if ((v = json_object_get(g, "secrets"))) {
		kp_join(&kp, path, "secrets");
		if ((rc = get_strv(v, kp.buf, secret_name_ok, &out->secrets,
				   &out->n_secrets, err)) < 0)
			return rc;
	}
	if ((v = json_object_get(g, "streaming"))) {
		kp_join(&kp, path, "streaming");
		if ((rc = get_bool(v, kp.buf, &out->streaming, err)) < 0)
			return rc;
	}
	if ((v = json_object_get(g, "toolbelt"))) {
		kp_join(&kp, path, "toolbelt");
		if ((rc = get_bool(v, kp.buf, &out->toolbelt, err)) < 0)
			return rc;
	}
	if ((v = json_object_get(g, "operations"))) {
		kp_join(&kp, path, "operations");
		if ((rc = get_strv(v, kp.buf, al_tool_name_valid,
				   &out->operations, &out->n_operations,
				   err)) < 0)
			return rc;
	}
	return 0;
}

/* Every operation a grant names is one the tenant defines. */
static int check_grant_operations(const al_cfg_grant *g, const char *path,
				  const char *ops_json, al_error **err)
{
	for (size_t i = 0; i < g->n_operations; i++)
		if (!al_operations_defined(ops_json, g->operations[i]))
			return bad(err, path,
				   "operations: names an operation the "
				   "tenant's \"operations\" does not define");
	return 0;
}

/* The built-in ceiling of each limit (0: none, docs/configuration.md). */
static uint64_t builtin_ceiling(unsigned bit)
{
	switch (bit) {
	case AL_LIMIT_WALL_MS: return AL_CFG_CEIL_WALL_MS;
	case AL_LIMIT_CPU_MS: return AL_CFG_CEIL_CPU_MS;
	case AL_LIMIT_MEMORY_BYTES: return AL_CFG_CEIL_MEMORY_BYTES;
	case AL_LIMIT_PIDS: return AL_CFG_CEIL_PIDS;
	case AL_LIMIT_OUTPUT_BYTES: return AL_CFG_CEIL_OUTPUT_BYTES;
	case AL_LIMIT_FILE_BYTES: return AL_CFG_CEIL_FILE_BYTES;
	case AL_LIMIT_OPEN_FILES: return AL_CFG_CEIL_OPEN_FILES;
	default: return 0;
	}
}

/* Configured ceilings first; then every limit the file leaves out gets its
 * built-in one, so a fresh install is bounded without tuning. */
static int parse_ceilings(json_t *c, const char *path, al_cfg_tenant *t,
			  al_error **err)
{
	al_limits *out = &t->ceilings;
	const char *key;
	json_t *v;
	if (c && !json_is_object(c))
		return bad(err, path, "expected an object");
	json_object_foreach(c, key, v) {
		kpath kp;
		unsigned bit;
		uint64_t val;
		int rc;
		kp_join(&kp, path, ident_ok(key) ? key : "?");
		if (strcmp(key, "argv_bytes") == 0 ||
		    strcmp(key, "env_bytes") == 0) {
			if ((rc = get_uint(v, kp.buf, 1, &val, err)) < 0)
				return rc;
			if (key[0] == 'a')
				t->argv_bytes_max = val;
			else
				t->env_bytes_max = val;
			continue;
		}
		if (al_limit_from_name(key, &bit) < 0)
			return bad(err, kp.buf, "unknown limit");
		if ((rc = get_uint(v, kp.buf, 1, &val, err)) < 0)
			return rc;
		*al_limits_field(out, bit) = val;
		out->set |= bit;
	}
	t->ceilings_configured = out->set;
	for (unsigned bit = 1; bit & AL_LIMIT__ALL; bit <<= 1) {
		uint64_t def = builtin_ceiling(bit);
		if ((out->set & bit) || def == 0)
			continue;
		*al_limits_field(out, bit) = def;
		out->set |= bit;
	}
	if (t->argv_bytes_max == 0)
		t->argv_bytes_max = AL_CFG_CEIL_ARGV_BYTES;
	if (t->env_bytes_max == 0)
		t->env_bytes_max = AL_CFG_CEIL_ENV_BYTES;
	return 0;
}

/* env_allow: only names the env policy refuses (anything else needs no
 * allowing), never a name the contract reserves. */
static bool env_allow_ok(const char *s)
{
	return al_env_policy_match(s) != NULL && !al_env_policy_reserved(s);
}

static int parse_pin(json_t *p, const char *path, al_cfg_pin *pin,
		     al_error **err)
{
	static const char *const pkeys[] = {"plan_sha256", "code_sha256",
					    "language", "grant", NULL};
	kpath sub;
	int rc;
	if (!json_is_object(p))
		return bad(err, path, "expected an object");
	if ((rc = only_keys(p, path, pkeys, err)) < 0)
		return rc;
	json_t *plan = json_object_get(p, "plan_sha256");
	json_t *code = json_object_get(p, "code_sha256");
	json_t *lang = json_object_get(p, "language");
	if ((plan != NULL) == (code != NULL))
		return bad(err, path,
			   "expected exactly one of plan_sha256 and "
			   "code_sha256");
	pin->kind = plan ? AL_PIN_PLAN : AL_PIN_CODE;
	kp_join(&sub, path, plan ? "plan_sha256" : "code_sha256");
	json_t *h = plan ? plan : code;
	if (!json_is_string(h) || !hex64_ok(json_string_value(h)))
		return bad(err, sub.buf, "expected 64 lower-case hex digits");
	memcpy(pin->sha256, json_string_value(h), 65);
	kp_join(&sub, path, "language");
	if (plan && lang)
		return bad(err, sub.buf,
			   "a plan pin's plan already names the language");
	/* A code pin without its language would let the same bytes run as
	 * another language (a polyglot): the language is part of the plan. */
	if (code && !lang)
		return bad(err, sub.buf, "missing: a code pin names its "
					 "language");
	if (lang) {
		if ((rc = get_str(lang, sub.buf, 32, &pin->language, err)) < 0)
			return rc;
		if (!ident_ok(pin->language))
			return bad(err, sub.buf, "not a valid language name");
	}
	kp_join(&sub, path, "grant");
	json_t *g = json_object_get(p, "grant");
	if (!g)
		return bad(err, sub.buf, "missing");
	return parse_grant(g, sub.buf, &pin->grant, err);
}

/* A container image's name (the same rule as the request's). */
static bool image_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		      (i > 0 && (s[i] == '.' || s[i] == '_' || s[i] == '-'))))
			return false;
	return true;
}

/* "request_rate": {"requests": N, "per_s": S} (airlockd: at most N
 * requests per S seconds, src/server/rate.c). */
static int parse_rate(json_t *v, const char *path, al_cfg_tenant *out,
		      al_error **err)
{
	static const char *const keys[] = {"requests", "per_s", NULL};
	kpath kp;
	uint64_t n = 0, per = 0;
	int rc;
	kp_join(&kp, path, "request_rate");
	if (!json_is_object(v))
		return bad(err, kp.buf, "expected an object");
	if ((rc = only_keys(v, kp.buf, keys, err)) < 0 ||
	    (rc = get_uint(json_object_get(v, "requests"), kp.buf, 1, &n,
			   err)) < 0 ||
	    (rc = get_uint(json_object_get(v, "per_s"), kp.buf, 1, &per,
			   err)) < 0)
		return rc;
	if (n > 1000000 || per > 86400)
		return bad(err, kp.buf, "integer out of range");
	out->rate_requests = (unsigned)n;
	out->rate_per_s = (unsigned)per;
	return 0;
}

static int parse_tenant(json_t *t, const char *path, al_cfg_tenant *out,
			al_error **err)
{
	static const char *const keys[] = {"languages", "grant", "pins",
					   "ceilings", "concurrency",
					   "accept_forwarded_env", "env_allow",
					   "operations", "pass_env", "secret_env",
					   "images", "request_rate",
					   NULL};
	kpath kp;
	int rc;
	json_t *v;
	if (!json_is_object(t))
		return bad(err, path, "expected an object");
	if ((rc = only_keys(t, path, keys, err)) < 0)
		return rc;
	out->grant.network = 1u << AL_NETWORK_NONE;
	out->grant.workspace = 1u << AL_WORKSPACE_NONE;
	/* No "languages" key: no language is allowed (deny by default). */
	if ((v = json_object_get(t, "languages"))) {
		kp_join(&kp, path, "languages");
		if (json_is_string(v)) {
			if (strcmp(json_string_value(v), "*") != 0)
				return bad(err, kp.buf,
					   "expected \"*\" or an array");
			out->all_languages = true;
		} else if ((rc = get_strv(v, kp.buf, ident_ok,
					  &out->languages, &out->n_languages,
					  err)) < 0) {
			return rc;
		}
	}
	if ((v = json_object_get(t, "images"))) {
		kp_join(&kp, path, "images");
		if ((rc = get_strv(v, kp.buf, image_name_ok, &out->images,
				   &out->n_images, err)) < 0)
			return rc;
	}
	if ((v = json_object_get(t, "grant"))) {
		kp_join(&kp, path, "grant");
		if ((rc = parse_grant(v, kp.buf, &out->grant, err)) < 0)
			return rc;
	}
	if ((v = json_object_get(t, "pins"))) {
		kp_join(&kp, path, "pins");
		if (!json_is_array(v))
			return bad(err, kp.buf, "expected an array");
		out->pins = calloc(json_array_size(v) + 1, sizeof(*out->pins));
		if (!out->pins)
			return oom(err);
		size_t i;
		json_t *p;
		json_array_foreach(v, i, p) {
			kpath pk;
			kp_index(&pk, kp.buf, i);
			out->n_pins = i + 1;
			if ((rc = parse_pin(p, pk.buf, &out->pins[i], err)) < 0)
				return rc;
		}
	}
	kp_join(&kp, path, "ceilings");
	if ((rc = parse_ceilings(json_object_get(t, "ceilings"), kp.buf, out,
				 err)) < 0)
		return rc;
	if ((v = json_object_get(t, "env_allow"))) {
		kp_join(&kp, path, "env_allow");
		if ((rc = get_strv(v, kp.buf, env_allow_ok, &out->env_allow,
				   &out->n_env_allow, err)) < 0)
			return rc;
	}
	if ((v = json_object_get(t, "concurrency"))) {
		uint64_t n = 0;
		kp_join(&kp, path, "concurrency");
		if ((rc = get_uint(v, kp.buf, 1, &n, err)) < 0)
			return rc;
		if (n > 100000)
			return bad(err, kp.buf, "integer out of range");
		out->concurrency = (unsigned)n;
	}
	if ((v = json_object_get(t, "accept_forwarded_env"))) {
		kp_join(&kp, path, "accept_forwarded_env");
		if (!json_is_boolean(v))
			return bad(err, kp.buf, "expected true or false");
		out->accept_forwarded_env = json_is_true(v);
	}
	if ((v = json_object_get(t, "operations"))) {
		kp_join(&kp, path, "operations");
		if ((rc = al_operations_parse(v, kp.buf, &out->operations_json,
					      err)) < 0)
			return rc;
	}
	kp_join(&kp, path, "grant");
	if ((rc = check_grant_operations(&out->grant, kp.buf,
					 out->operations_json, err)) < 0)
		return rc;
	for (size_t i = 0; i < out->n_pins; i++) {
		kp_join(&kp, path, "pins");
		if ((rc = check_grant_operations(&out->pins[i].grant, kp.buf,
						 out->operations_json, err)) < 0)
			return rc;
	}
	if ((v = json_object_get(t, "request_rate")) &&
	    (rc = parse_rate(v, path, out, err)) < 0)
		return rc;
	return al_cfg_env_parse(t, path, out, err);
}

/* A candidate's "module": an absolute path (whether the file is there and
 * may be trusted is checked when it is loaded, providers/module.c). */
static int parse_module(json_t *e, const char *path, al_cfg_candidate *c,
			al_error **err)
{
	json_t *m = json_object_get(e, "module");
	kpath mk;
	if (!m)
		return 0;
	kp_join(&mk, path, "module");
	int rc = get_str(m, mk.buf, 4095, &c->module, err);
	if (rc < 0)
		return rc;
	if (!c->module || c->module[0] != '/')
		return bad(err, mk.buf, "expected an absolute path");
	return 0;
}

static int parse_candidates(json_t *v, al_config *cfg, al_error **err)
{
	if (!json_is_array(v) || json_array_size(v) == 0)
		return bad(err, "providers", "expected a non-empty array");
	cfg->candidates = calloc(json_array_size(v), sizeof(*cfg->candidates));
	if (!cfg->candidates)
		return oom(err);
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e) {
		static const char *const keys[] = {"provider", "config",
						   "module", NULL};
		kpath kp, sub;
		int rc;
		al_cfg_candidate *c = &cfg->candidates[i];
		cfg->n_candidates = i + 1;
		kp_index(&kp, "providers", i);
		json_t *name = e;
		if (json_is_object(e)) {
			if ((rc = only_keys(e, kp.buf, keys, err)) < 0)
				return rc;
			name = json_object_get(e, "provider");
			kp_join(&sub, kp.buf, "provider");
			if (!name)
				return bad(err, sub.buf, "missing");
			json_t *pc = json_object_get(e, "config");
			if ((rc = parse_module(e, kp.buf, c, err)) < 0)
				return rc;
			if (pc) {
				kpath ck;
				kp_join(&ck, kp.buf, "config");
				if (!json_is_object(pc))
					return bad(err, ck.buf,
						   "expected an object");
				c->config_json = json_dumps(
					pc, JSON_COMPACT | JSON_SORT_KEYS);
				if (!c->config_json)
					return oom(err);
			}
		} else {
			sub = kp;
		}
		if ((rc = get_str(name, sub.buf, 64, &c->provider, err)) < 0)
			return rc;
		if (!ident_ok(c->provider))
			return bad(err, sub.buf, "not a valid provider name");
		for (size_t j = 0; j < i && cfg->candidates[j].provider; j++)
			if (strcmp(cfg->candidates[j].provider,
				   c->provider) == 0)
				return bad(err, sub.buf, "duplicate provider");
		if (c->module && al_provider_lookup(c->provider))
			return bad(err, sub.buf,
				   "a module cannot take the name of a "
				   "built-in provider");
	}
	return 0;
}

/* "require_provider": one of the configured candidates. */
static int parse_require(json_t *v, al_config *cfg, al_error **err)
{
	int rc = get_str(v, "require_provider", 64, &cfg->require_provider,
			 err);
	if (rc < 0)
		return rc;
	if (!cfg->require_provider || !ident_ok(cfg->require_provider))
		return bad(err, "require_provider",
			   "not a valid provider name");
	for (size_t i = 0; i < cfg->n_candidates; i++)
		if (cfg->candidates[i].provider &&
		    strcmp(cfg->candidates[i].provider,
			   cfg->require_provider) == 0)
			return 0;
	return bad(err, "require_provider",
		   "names a provider that is not among the providers");
}

static int parse_tenants(json_t *v, al_config *cfg, al_error **err)
{
	if (!json_is_object(v) || json_object_size(v) == 0)
		return bad(err, "tenants", "expected a non-empty object");
	cfg->tenants = calloc(json_object_size(v), sizeof(*cfg->tenants));
	if (!cfg->tenants)
		return oom(err);
	const char *key;
	json_t *t;
	json_object_foreach(v, key, t) {
		kpath kp;
		int rc;
		al_cfg_tenant *ten = &cfg->tenants[cfg->n_tenants++];
		if (!ident_ok(key))
			return bad(err, "tenants", "not a valid tenant name");
		kp_join(&kp, "tenants", key);
		if (!(ten->name = strdup(key)))
			return oom(err);
		if ((rc = parse_tenant(t, kp.buf, ten, err)) < 0)
			return rc;
	}
	return 0;
}

static int parse_audit(json_t *v, al_config *cfg, al_error **err)
{
	static const char *const keys[] = {"finished_synchronous",
					   "busy_timeout_ms", NULL};
	int rc;
	if (!json_is_object(v))
		return bad(err, "audit", "expected an object");
	if ((rc = only_keys(v, "audit", keys, err)) < 0)
		return rc;
	json_t *e;
	if ((e = json_object_get(v, "finished_synchronous"))) {
		const char *s = json_is_string(e) ? json_string_value(e) : "";
		if (strcmp(s, "auto") == 0)
			cfg->audit_finished_sync = AL_AUDIT_SYNC_AUTO;
		else if (strcmp(s, "full") == 0)
			cfg->audit_finished_sync = AL_AUDIT_SYNC_FULL;
		else if (strcmp(s, "normal") == 0)
			cfg->audit_finished_sync = AL_AUDIT_SYNC_NORMAL;
		else
			return bad(err, "audit.finished_synchronous",
				   "expected \"auto\", \"full\" or "
				   "\"normal\"");
	}
	if ((e = json_object_get(v, "busy_timeout_ms"))) {
		if ((rc = get_uint(e, "audit.busy_timeout_ms", 1,
				   &cfg->audit_busy_timeout_ms, err)) < 0)
			return rc;
		if (cfg->audit_busy_timeout_ms > 600000)
			return bad(err, "audit.busy_timeout_ms",
				   "integer out of range");
	}
	return 0;
}

static int parse_secrets(json_t *v, al_config *cfg, al_error **err)
{
	static const char *const keys[] = {"dir", "file", NULL};
	int rc;
	if (!json_is_object(v) || json_object_size(v) != 1)
		return bad(err, "secrets", "expected {\"dir\": …} or "
					   "{\"file\": …}");
	if ((rc = only_keys(v, "secrets", keys, err)) < 0)
		return rc;
	json_t *e;
	if ((e = json_object_get(v, "dir"))) {
		cfg->secrets_kind = AL_SECRETS_DIR;
		rc = get_str(e, "secrets.dir", 4096, &cfg->secrets_path, err);
	} else {
		cfg->secrets_kind = AL_SECRETS_FILE;
		rc = get_str(json_object_get(v, "file"), "secrets.file", 4096,
			     &cfg->secrets_path, err);
	}
	if (rc == 0 && (!cfg->secrets_path || cfg->secrets_path[0] != '/'))
		rc = bad(err, cfg->secrets_kind == AL_SECRETS_DIR
				      ? "secrets.dir"
				      : "secrets.file",
			 "expected an absolute path");
	return rc;
}

static int parse_build_cache(json_t *v, al_config *cfg, al_error **err)
{
	static const char *const keys[] = {"bytes", "shared", NULL};
	json_t *x;
	int rc;
	if (!json_is_object(v))
		return bad(err, "build_cache", "expected an object");
	if ((rc = only_keys(v, "build_cache", keys, err)) < 0)
		return rc;
	if ((x = json_object_get(v, "bytes")) &&
	    (rc = get_uint(x, "build_cache.bytes", 0, &cfg->build_cache_bytes,
			   err)) < 0)
		return rc;
	if ((x = json_object_get(v, "shared")) &&
	    (rc = get_bool(x, "build_cache.shared", &cfg->build_cache_shared,
			   err)) < 0)
		return rc;
	return 0;
}

static int parse_root(json_t *root, al_config *cfg, al_error **err)
{
	/* "tokens" (sha256 hex -> tenant) and "compat" belong to the
	 * service and are validated there (src/server/auth.c, compat_config.c). */
	static const char *const keys[] = {
		"execution_enabled", "trusted_provider_acknowledged",
		"providers", "tenants", "concurrency", "slot_wait_ms",
		"state_dir", "idempotency_retention_s", "audit", "secrets",
		"grace_ms", "tokens", "retention", "idle_supervisors",
		"spare_run_dirs",
		"acknowledged_providers", "require_provider", "build_cache", "compat",
		"store", "fleet", NULL};
	int rc;
	json_t *v;
	if (!json_is_object(root))
		return bad(err, "$", "expected a JSON object");
	if ((rc = only_keys(root, "", keys, err)) < 0)
		return rc;
	/* The fleet's store (docs/scale-out.md); airlockd reads it. */
	if ((v = json_object_get(root, "store")) &&
	    (!json_is_string(v) ||
	     (strcmp(json_string_value(v), "sqlite") != 0 &&
	      strncmp(json_string_value(v), "sqlite:///", 10) != 0 &&
	      strncmp(json_string_value(v), "postgresql://", 13) != 0 &&
	      strncmp(json_string_value(v), "postgres://", 11) != 0)))
		return bad(err, "store",
			   "expected \"sqlite\", sqlite:///PATH or a "
			   "postgresql:// URL");
	if ((v = json_object_get(root, "fleet")) && !json_is_object(v))
		return bad(err, "fleet", "expected an object");
	if ((v = json_object_get(root, "execution_enabled")) &&
	    (rc = get_bool(v, "execution_enabled", &cfg->execution_enabled,
			   err)) < 0)
		return rc;
	if ((v = json_object_get(root, "trusted_provider_acknowledged")) &&
	    (rc = get_bool(v, "trusted_provider_acknowledged",
			   &cfg->trusted_acknowledged, err)) < 0)
		return rc;
	if ((v = json_object_get(root, "acknowledged_providers")) &&
	    (rc = get_strv(v, "acknowledged_providers", ident_ok,
			   &cfg->acknowledged, &cfg->n_acknowledged, err)) < 0)
		return rc;
	if (!(v = json_object_get(root, "providers")))
		return bad(err, "providers", "missing");
	if ((rc = parse_candidates(v, cfg, err)) < 0)
		return rc;
	if ((v = json_object_get(root, "require_provider")) &&
	    (rc = parse_require(v, cfg, err)) < 0)
		return rc;
	if (!(v = json_object_get(root, "tenants")))
		return bad(err, "tenants", "missing");
	if ((rc = parse_tenants(v, cfg, err)) < 0)
		return rc;
	if ((v = json_object_get(root, "concurrency"))) {
		uint64_t n = 0;
		if ((rc = get_uint(v, "concurrency", 1, &n, err)) < 0)
			return rc;
		if (n > 100000)
			return bad(err, "concurrency", "integer out of range");
		cfg->concurrency = (unsigned)n;
	}
	if ((v = json_object_get(root, "slot_wait_ms")) &&
	    (rc = get_uint(v, "slot_wait_ms", 0, &cfg->slot_wait_ms, err)) < 0)
		return rc;
	if ((v = json_object_get(root, "state_dir"))) {
		if ((rc = get_str(v, "state_dir", 4096, &cfg->state_dir,
				  err)) < 0)
			return rc;
		if (!cfg->state_dir || cfg->state_dir[0] != '/')
			return bad(err, "state_dir",
				   "expected an absolute path");
	}
	if ((v = json_object_get(root, "idempotency_retention_s")) &&
	    (rc = get_uint(v, "idempotency_retention_s", 1,
			   &cfg->idempotency_retention_s, err)) < 0)
		return rc;
	if ((v = json_object_get(root, "audit")) &&
	    (rc = parse_audit(v, cfg, err)) < 0)
		return rc;
	if ((v = json_object_get(root, "secrets")) &&
	    (rc = parse_secrets(v, cfg, err)) < 0)
		return rc;
	if ((v = json_object_get(root, "grace_ms"))) {
		if ((rc = get_uint(v, "grace_ms", 0, &cfg->grace_ms, err)) < 0)
			return rc;
		if (cfg->grace_ms > 3600000)
			return bad(err, "grace_ms", "integer out of range");
	}
	if ((v = json_object_get(root, "retention"))) {
		if ((rc = get_uint(v, "retention", 1, &cfg->retention_s,
				   err)) < 0)
			return rc;
		if (cfg->retention_s > AL_CFG_MAX_RUN_RETENTION_S)
			return bad(err, "retention", "integer out of range");
	}
	if ((v = json_object_get(root, "build_cache")) &&
	    (rc = parse_build_cache(v, cfg, err)) < 0)
		return rc;
	if ((v = json_object_get(root, "idle_supervisors"))) {
		uint64_t n = 0;
		if ((rc = get_uint(v, "idle_supervisors", 0, &n, err)) < 0)
			return rc;
		if (n > AL_CFG_MAX_IDLE_SUPERVISORS)
			return bad(err, "idle_supervisors",
				   "integer out of range");
		cfg->idle_supervisors = (unsigned)n;
	}
	if ((v = json_object_get(root, "spare_run_dirs"))) {
		uint64_t n = 0;
		if ((rc = get_uint(v, "spare_run_dirs", 0, &n, err)) < 0)
			return rc;
		if (n > AL_CFG_MAX_SPARE_RUN_DIRS)
			return bad(err, "spare_run_dirs",
				   "integer out of range");
		cfg->spare_run_dirs = (unsigned)n;
	}
	/* A secret a tenant may be granted must come from a store. */
	for (size_t i = 0; i < cfg->n_tenants; i++) {
		const al_cfg_tenant *t = &cfg->tenants[i];
		bool any = t->grant.n_secrets > 0;
		for (size_t j = 0; j < t->n_pins; j++)
			any = any || t->pins[j].grant.n_secrets > 0;
		if (any && cfg->secrets_kind == AL_SECRETS_NONE)
			return bad(err, "secrets",
				   "a tenant grants secrets but no store is "
				   "configured");
	}
	return 0;
}

int al_config_parse(const char *json, size_t len, al_config **out,
		    al_error **err)
{
	json_error_t jerr;
	al_config *cfg = NULL;
	json_t *root = NULL;
	int rc;

	*out = NULL;
	/* A raw NUL byte is never JSON, but jansson 2.14 skips one that
	 * follows a number; the source is also kept as a C string. */
	if (memchr(json, '\0', len) != NULL)
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL,
				    "syntax",
				    "configuration is not valid JSON (a NUL "
				    "byte)");
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL,
				    "syntax",
				    "configuration is not valid JSON "
				    "(line %d, column %d)",
				    jerr.line, jerr.column);
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg || !(cfg->source = strndup(json, len))) {
		rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				  "out of memory");
		goto out;
	}
	cfg->execution_enabled = true;
	cfg->concurrency = AL_CFG_DEFAULT_CONCURRENCY;
	cfg->slot_wait_ms = AL_CFG_DEFAULT_SLOT_WAIT_MS;
	cfg->idempotency_retention_s = AL_CFG_DEFAULT_RETENTION_S;
	cfg->audit_finished_sync = AL_AUDIT_SYNC_AUTO;
	cfg->audit_busy_timeout_ms = AL_CFG_DEFAULT_BUSY_TIMEOUT_MS;
	cfg->grace_ms = AL_CFG_DEFAULT_GRACE_MS;
	cfg->build_cache_bytes = 256ull * 1024 * 1024;
	cfg->idle_supervisors = AL_CFG_DEFAULT_IDLE_SUPERVISORS;
	cfg->spare_run_dirs = AL_CFG_DEFAULT_SPARE_RUN_DIRS;
	cfg->retention_s = AL_CFG_DEFAULT_RUN_RETENTION_S;
	rc = parse_root(root, cfg, err);
out:
	json_decref(root);
	if (rc < 0) {
		al_config_free(cfg);
		return al_error_wrap(err, rc, NULL);
	}
	*out = cfg;
	return 0;
}

int al_config_load(const char *path, al_config **out, al_error **err)
{
	FILE *f = NULL;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int rc;

	*out = NULL;
	f = fopen(path, "re");
	if (!f)
		return al_error_set(err, AL_ERR_IO, errno, "config",
				    "cannot open the configuration file");
	for (;;) {
		if (len + 4096 > cap) {
			if (cap > 4u * 1024u * 1024u) {
				rc = al_error_set(err, AL_ERR_INVALID_CONFIG,
						  EFBIG, "$",
						  "configuration file too "
						  "large");
				goto out;
			}
			cap = cap ? cap * 2 : 8192;
			char *nb = realloc(buf, cap);
			if (!nb) {
				rc = al_error_set(err, AL_ERR_INTERNAL,
						  ENOMEM, NULL,
						  "out of memory");
				goto out;
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		rc = al_error_set(err, AL_ERR_IO, EIO, "config",
				  "cannot read the configuration file");
		goto out;
	}
	rc = al_config_parse(buf ? buf : "", len, out, err);
out:
	free(buf);
	fclose(f);
	return rc;
}

int al_config_default(al_config **out, al_error **err)
{
	/* The operator's own defaults: every network mode may be granted,
	 * because the provider still offers only what it enforces (the
	 * sandbox gives `host` only when its configuration allows it, and
	 * the trusted local provider runs only when chosen explicitly). */
	static const char def[] =
		"{\"execution_enabled\": true,"
		" \"providers\": [\"sandbox\"],"
		" \"tenants\": {\"default\": {\"languages\": \"*\","
		" \"grant\": {\"network\": [\"none\", \"loopback\", \"host\"],"
		" \"workspace\": [\"none\", \"ro\", \"rw\"],"
		" \"secrets\": [], \"streaming\": true}}}}";
	return al_config_parse(def, sizeof(def) - 1, out, err);
}

int al_config_copy(const al_config *cfg, al_config **out, al_error **err)
{
	return al_config_parse(cfg->source, strlen(cfg->source), out, err);
}

const al_cfg_tenant *al_config_tenant(const al_config *cfg, const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < cfg->n_tenants; i++)
		if (strcmp(cfg->tenants[i].name, name) == 0)
			return &cfg->tenants[i];
	return NULL;
}

bool al_cfg_tenant_allows_env(const al_cfg_tenant *t, const char *name)
{
	for (size_t i = 0; i < t->n_env_allow; i++)
		if (strcmp(t->env_allow[i], name) == 0)
			return true;
	return false;
}

bool al_cfg_acknowledged(const al_config *cfg, const char *provider)
{
	for (size_t i = 0; i < cfg->n_acknowledged; i++)
		if (strcmp(cfg->acknowledged[i], provider) == 0)
			return true;
	return false;
}

bool al_cfg_tenant_allows_language(const al_cfg_tenant *t, const char *lang)
{
	if (t->all_languages)
		return true;
	for (size_t i = 0; i < t->n_languages; i++)
		if (strcmp(t->languages[i], lang) == 0)
			return true;
	return false;
}
