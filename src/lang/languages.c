/* The languages table, observation with caching, and argv plans; see
 * languages.h and docs/languages.md. */
#include "lang/languages.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/locate.h"
#include "lang/observe.h"
#include "lang/observe_compiled.h"
#include "lang/path_memo.h"
#include "lang/table.h"
#include "lang/toolchain_cache.h"

#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
/* How long a toolchain's version probe may take: bounded so a hung
 * interpreter cannot stall a probe, generous because one that times out
 * makes its language unavailable until the next observation (under a
 * parallel test suite on a slow 2-core VM, pyenv's python3 shim took
 * over 5 s; docs/languages.md).  The JVM
 * and pwsh (.NET) start slowest. */
#define PROBE_MS 10000
#define SLOW_PROBE_MS 20000

static const char *const sh_names[] = { "sh", NULL };
static const char *const bash_names[] = { "bash", NULL };
static const char *const python_names[] = { "python3", "python", NULL };
static const char *const node_names[] = { "node", "nodejs", NULL };
static const char *const ruby_names[] = { "ruby", NULL };
static const char *const pwsh_names[] = { "pwsh", NULL };
static const char *const gcc_names[] = { "gcc", "cc", NULL };
static const char *const gxx_names[] = { "g++", "c++", NULL };
static const char *const go_names[] = { "go", NULL };
static const char *const rustc_names[] = { "rustc", NULL };
static const char *const javac_names[] = { "javac", NULL };

static const al_lang_row rows[] = {
	{ "sh", "sh", "main.sh", sh_names, AL_PROBE_SH, PROBE_MS },
	{ "bash", "bash", "main.sh", bash_names, AL_PROBE_BASH, PROBE_MS },
	{ "python", "python", "main.py", python_names, AL_PROBE_PYTHON, PROBE_MS },
	{ "javascript", "node", "main.js", node_names, AL_PROBE_NODE, PROBE_MS },
	{ "typescript", "node", "main.ts", node_names, AL_PROBE_TYPESCRIPT, PROBE_MS },
	{ "ruby", "ruby", "main.rb", ruby_names, AL_PROBE_RUBY, PROBE_MS },
	{ "powershell", "pwsh", "main.ps1", pwsh_names, AL_PROBE_PWSH, SLOW_PROBE_MS },
	{ "c", "c", "main.c", gcc_names, AL_PROBE_GCC, PROBE_MS },
	{ "cpp", "c++", "main.cpp", gxx_names, AL_PROBE_GCC, PROBE_MS },
	{ "go", "go", "main.go", go_names, AL_PROBE_GO, PROBE_MS },
	{ "rust", "rust", "main.rs", rustc_names, AL_PROBE_RUST, PROBE_MS },
	/* javac's public class must match the file: Main.java, class Main.
	 * The JVM starts slowly. */
	{ "java", "java", "Main.java", javac_names, AL_PROBE_JAVA, SLOW_PROBE_MS },
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

static const char *const names[NROWS + 1] = {
	"sh", "bash", "python", "javascript", "typescript", "ruby", "powershell",
	"c", "cpp", "go", "rust", "java", NULL,
};

/* ---- table ---- */

const al_lang_row *al_lang_row_find(const char *language)
{
	for (size_t i = 0; language && i < NROWS; i++) {
		if (strcmp(rows[i].language, language) == 0)
			return &rows[i];
	}
	return NULL;
}

size_t al_lang_row_index(const al_lang_row *row)
{
	return (size_t)(row - rows);
}

bool al_lang_row_compiled(const al_lang_row *row)
{
	return row->probe == AL_PROBE_GCC || row->probe == AL_PROBE_GO ||
	       row->probe == AL_PROBE_RUST || row->probe == AL_PROBE_JAVA;
}

bool al_language_compiled(const char *language)
{
	const al_lang_row *row = al_lang_row_find(language);

	return row && al_lang_row_compiled(row);
}

const char *const *al_language_names(void)
{
	return names;
}

bool al_language_known(const char *language)
{
	return al_lang_row_find(language) != NULL;
}

const char *al_language_script_name(const char *language)
{
	const al_lang_row *row = al_lang_row_find(language);

	return row ? row->script_name : NULL;
}

const char *al_language_trial_code(const char *language)
{
	const al_lang_row *row = al_lang_row_find(language);

	if (!row)
		return NULL;
	switch (row->probe) {
	case AL_PROBE_GCC:
		return "int main(void) { return 0; }\n";
	case AL_PROBE_GO:
		return "package main\n\nfunc main() {}\n";
	case AL_PROBE_RUST:
		return "fn main() {}\n";
	case AL_PROBE_JAVA:
		return "public class Main { public static void main(String[] a) {} }\n";
	default:
		return NULL;
	}
}

/* ---- string vectors and copies ---- */

size_t al_strv_len(char *const *v)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	return n;
}

void al_strv_free_all(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

int al_strv_push(char ***v, const char *s)
{
	size_t n = al_strv_len(*v);
	char *copy = strdup(s);
	char **nv;

	if (!copy)
		return -ENOMEM;
	nv = realloc(*v, (n + 2) * sizeof(*nv));
	if (!nv) {
		free(copy);
		return -ENOMEM;
	}
	nv[n] = copy;
	nv[n + 1] = NULL;
	*v = nv;
	return 0;
}

int al_strv_copy(char *const *v, char ***out)
{
	size_t n = al_strv_len(v);
	char **c = calloc(n + 1, sizeof(*c));

	*out = NULL;
	if (!c)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		c[i] = strdup(v[i]);
		if (!c[i]) {
			al_strv_free_all(c);
			return -ENOMEM;
		}
	}
	*out = c;
	return 0;
}

void al_toolchain_free(al_toolchain *tc)
{
	if (!tc)
		return;
	free(tc->language);
	free(tc->toolchain);
	free(tc->version);
	free(tc->path);
	al_strv_free_all(tc->extra_roots);
	free(tc->helper_path);
	free(tc);
}

int al_toolchain_dup(const al_toolchain *src, al_toolchain **out)
{
	al_toolchain *tc = calloc(1, sizeof(*tc));

	*out = NULL;
	if (!tc)
		return -ENOMEM;
	tc->language = strdup(src->language);
	tc->toolchain = strdup(src->toolchain);
	tc->version = strdup(src->version);
	tc->path = strdup(src->path);
	tc->helper_path = src->helper_path ? strdup(src->helper_path) : NULL;
	if (!tc->language || !tc->toolchain || !tc->version || !tc->path ||
	    (src->helper_path && !tc->helper_path) ||
	    al_strv_copy(src->extra_roots, &tc->extra_roots)) {
		al_toolchain_free(tc);
		return -ENOMEM;
	}
	*out = tc;
	return 0;
}

void al_plan_free(al_plan *plan)
{
	if (!plan)
		return;
	al_strv_free_all(plan->build_argv);
	al_strv_free_all(plan->run_argv);
	al_strv_free_all(plan->build_env);
	plan->build_argv = NULL;
	plan->run_argv = NULL;
	plan->build_env = NULL;
}

/* ---- observation ---- */

/* Node >= 23.6 strips TypeScript types by default, >= 22.6 behind
 * --experimental-strip-types. */
static bool node_strips_types(const char *version)
{
	return al_version_satisfies(version, ">=22.6") == 1;
}

static bool node_strips_by_default(const char *version)
{
	return al_version_satisfies(version, ">=23.6") == 1;
}

/* The first candidate name found anywhere on PATH, with its identity. */
static int locate(const al_lang_row *row, const char *path_env, char **candidate,
		  char id[AL_FILE_ID_MAX], al_error **err)
{
	for (size_t i = 0; row->candidates[i]; i++) {
		int rc = al_path_find(path_env, row->candidates[i], candidate);

		if (rc == -ENOMEM)
			return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL, "out of memory");
		if (rc == 0 && al_file_id(*candidate, id) == 0)
			return 0;
		free(*candidate);
		*candidate = NULL;
	}
	return al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "toolchain_absent",
			    "%s: no %s%s%s on PATH", row->language, row->candidates[0],
			    row->candidates[1] ? " or " : "",
			    row->candidates[1] ? row->candidates[1] : "");
}

static int observe_row(const al_lang_row *row, const char *path_env,
		       const char *cache_dir, al_toolchain **out, al_error **err);

/* typescript: node's facts (the javascript row, cached) plus esbuild when
 * this node cannot strip types itself. */
static int observe_typescript(const al_lang_row *row, const al_toolchain_cache_key *key,
			      const char *path_env, const char *cache_dir,
			      al_toolchain **out, al_error **err)
{
	al_toolchain *node = NULL, *tc = NULL;
	int rc = observe_row(al_lang_row_find("javascript"), path_env, cache_dir, &node, err);
	bool strips;

	if (rc || !node)
		return rc ? rc : -ENOENT;
	strips = node_strips_types(node->version);
	if (!strips && !key->helper) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "toolchain_absent",
				  "typescript: node %s cannot strip types (needs >= 22.6) "
				  "and no esbuild was found (scripts/install-tools.sh)",
				  node->version);
		goto out;
	}
	rc = al_toolchain_dup(node, &tc);
	if (rc)
		goto fail;
	free(tc->language);
	tc->language = strdup(row->language);
	if (!tc->language) {
		rc = -ENOMEM;
		goto fail;
	}
	if (!strips) {
		/* The sandbox must see esbuild's directory too. */
		char *dir = strdup(key->helper);
		char **dirs = NULL;

		tc->helper_path = strdup(key->helper);
		if (!dir || !tc->helper_path) {
			free(dir);
			rc = -ENOMEM;
			goto fail;
		}
		*strrchr(dir, '/') = '\0';
		rc = al_strv_copy(tc->extra_roots, &dirs);
		if (!rc)
			rc = al_strv_push(&dirs, dir);
		free(dir);
		if (!rc) {
			al_strv_free_all(tc->extra_roots);
			tc->extra_roots = NULL;
			rc = al_roots_build(dirs, &tc->extra_roots);
		}
		al_strv_free_all(dirs);
		if (rc)
			goto fail;
	}
	*out = tc;
	tc = NULL;
	goto out;
fail:
	rc = al_error_set(err, AL_ERR_INTERNAL, -rc, NULL, "typescript: cannot record the toolchain");
out:
	al_toolchain_free(tc);
	al_toolchain_free(node);
	return rc;
}

static int observe_row(const al_lang_row *row, const char *path_env,
		       const char *cache_dir, al_toolchain **out, al_error **err)
{
	al_toolchain_cache_key key;
	char *candidate = NULL, *helper = NULL;
	al_toolchain *tc = NULL;
	int rc;

	memset(&key, 0, sizeof(key));
	rc = locate(row, path_env, &candidate, key.candidate_id, err);
	if (rc)
		return rc;
	if (row->probe == AL_PROBE_TYPESCRIPT) {
		rc = al_esbuild_find(path_env, &helper);
		if (rc == -ENOMEM) {
			rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL, "out of memory");
			goto out;
		}
		if (rc == 0 && al_file_id(helper, key.helper_id) < 0) {
			free(helper);
			helper = NULL;
		}
	}
	key.path_env = path_env;
	key.candidate = candidate;
	key.helper = helper;
	rc = al_toolchain_cache_load(row, &key, cache_dir, out);
	if (rc != -ENOENT) {
		if (rc)
			rc = al_error_set(err, AL_ERR_INTERNAL, -rc, NULL, "out of memory");
		goto out;
	}
	if (row->probe == AL_PROBE_TYPESCRIPT)
		rc = observe_typescript(row, &key, path_env, cache_dir, &tc, err);
	else if (al_lang_row_compiled(row))
		rc = al_observe_compiler(row, candidate, path_env, &tc, err);
	else
		rc = al_observe_interpreter(row, candidate, path_env, &tc, err);
	if (rc)
		goto out;
	al_toolchain_cache_store(row, &key, cache_dir, tc);
	*out = tc;
	tc = NULL;
out:
	al_toolchain_free(tc);
	free(candidate);
	free(helper);
	return rc;
}

int al_toolchain_observe(const char *language, const char *path_env,
			 const char *cache_dir, al_toolchain **out,
			 al_error **err)
{
	const al_lang_row *row = al_lang_row_find(language);

	if (!out)
		return al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL, NULL,
				    "no output for the toolchain");
	*out = NULL;
	if (!row)
		return al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL, "language",
				    "unknown language");
	if (!path_env)
		path_env = getenv("PATH");
	if (!path_env)
		path_env = DEFAULT_PATH;
	return observe_row(row, path_env, cache_dir, out, err);
}

void al_toolchain_cache_reset(void)
{
	al_toolchain_cache_forget();
	al_path_memo_reset();
}

/* ---- plans ---- */

typedef struct argv_builder {
	char **v;
	int rc;
} argv_builder;

static void add(argv_builder *b, const char *s)
{
	if (!b->rc)
		b->rc = al_strv_push(&b->v, s);
}

/* Adds prefix followed by value ("--outfile=" + path). */
static void add_joined(argv_builder *b, const char *prefix, const char *value)
{
	size_t lp = strlen(prefix), lv = strlen(value);
	char *s;

	if (b->rc)
		return;
	s = malloc(lp + lv + 1);
	if (!s) {
		b->rc = -ENOMEM;
		return;
	}
	memcpy(s, prefix, lp);
	memcpy(s + lp, value, lv + 1);
	add(b, s);
	free(s);
}

int al_toolchain_plan(const al_toolchain *tc, const char *script_path,
		      const char *build_dir, char *const *args, size_t nargs,
		      al_plan *out, al_error **err)
{
	return al_toolchain_plan_with(tc, script_path, build_dir, args, nargs,
				      NULL, out, err);
}

int al_toolchain_plan_with(const al_toolchain *tc, const char *script_path,
			   const char *build_dir, char *const *args,
			   size_t nargs, const al_plan_opts *opts, al_plan *out,
			   al_error **err)
{
	const al_lang_row *row = tc ? al_lang_row_find(tc->language) : NULL;
	argv_builder build = { NULL, 0 }, run = { NULL, 0 };
	char *js = NULL;
	const char *script = script_path;

	if (!out)
		return al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL, NULL, "no plan output");
	out->build_argv = NULL;
	out->run_argv = NULL;
	out->build_env = NULL;
	if (!row || !tc->path || tc->path[0] != '/')
		return al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL, NULL,
				    "not an observed toolchain");
	if (!script_path || script_path[0] != '/')
		return al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL, NULL,
				    "script path must be absolute");
	if (nargs && !args)
		return al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL, NULL, "no arguments");
	for (size_t i = 0; i < nargs; i++)
		if (!args[i])
			return al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL, NULL,
					    "an argument is missing");
	if (al_lang_row_compiled(row)) {
		al_plan_opts none = { 0 };
		int rc;

		if (!build_dir || build_dir[0] != '/')
			return al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL, NULL,
					    "%s needs an absolute build dir", row->language);
		rc = al_build_flags_check(row->language, opts ? opts->flags : NULL,
					  opts ? opts->n_flags : 0, err);
		if (rc)
			return rc;
		rc = al_plan_compiled(row, tc, script_path, build_dir, args, nargs,
				      opts ? opts : &none, out);
		if (rc)
			return al_error_set(err, AL_ERR_INTERNAL, -rc, NULL, "out of memory");
		return 0;
	}
	if (opts && opts->n_flags)
		return al_error_set(err, AL_ERR_INVALID_REQUEST, EINVAL, "build_flags",
				    "%s has no build step to take flags", row->language);
	if (row->probe == AL_PROBE_TYPESCRIPT && tc->helper_path) {
		if (!build_dir || build_dir[0] != '/')
			return al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL, NULL,
					    "typescript needs an absolute build dir");
		if (asprintf(&js, "%s/main.js", build_dir) < 0)
			return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL, "out of memory");
		/* Transpile only (no bundling), to CommonJS for this node. */
		add(&build, tc->helper_path);
		add(&build, script_path);
		add_joined(&build, "--outfile=", js);
		add(&build, "--format=cjs");
		add(&build, "--platform=node");
		add_joined(&build, "--target=node", tc->version);
		add(&build, "--log-level=warning");
		script = js;
	}

	add(&run, tc->path);
	switch (row->probe) {
	case AL_PROBE_PYTHON:
		/* A normal script run (__main__, script dir on sys.path) that
		 * ignores PYTHON* variables and the user site dir. */
		add(&run, "-E");
		add(&run, "-s");
		break;
	case AL_PROBE_TYPESCRIPT:
		if (!tc->helper_path) {
			if (!node_strips_by_default(tc->version))
				add(&run, "--experimental-strip-types");
			/* The feature's warning is not the program's output. */
			add(&run, "--disable-warning=ExperimentalWarning");
		}
		break;
	case AL_PROBE_PWSH:
		add(&run, "-NoLogo");
		add(&run, "-NoProfile");
		add(&run, "-NonInteractive");
		add(&run, "-File");
		break;
	default:
		break;
	}
	add(&run, script);
	for (size_t i = 0; i < nargs; i++) {
		if (!args[i]) {
			run.rc = run.rc ? run.rc : -EINVAL;
			break;
		}
		add(&run, args[i]);
	}
	free(js);
	if (build.rc || run.rc) {
		int rc = build.rc ? build.rc : run.rc;

		al_strv_free_all(build.v);
		al_strv_free_all(run.v);
		if (rc == -EINVAL)
			return al_error_set(err, AL_ERR_INVALID_ARGUMENT, EINVAL, NULL,
					    "an argument is missing");
		return al_error_set(err, AL_ERR_INTERNAL, -rc, NULL, "out of memory");
	}
	out->build_argv = build.v;
	out->run_argv = run.v;
	return 0;
}
