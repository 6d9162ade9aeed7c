/* Build and run steps of the compiled languages, and the allow-list of
 * build flags a request may add; see docs/languages.md. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/table.h"

/* The JVM's heap is sized from the memory limit: half of it, leaving room
 * for metaspace, code cache and thread stacks (the limit is a cgroup
 * charge, not an address-space limit, so reserved memory costs nothing). */
#define JVM_MIN_HEAP_MB 16

typedef struct vec {
	char **v;
	int rc;
} vec;

static void add(vec *b, const char *s)
{
	if (!b->rc)
		b->rc = al_strv_push(&b->v, s);
}

/* prefix followed by a heap size in MiB ("-Xmx128m"). */
static void add_heap(vec *b, const char *prefix, unsigned long long mb)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%s%llum", prefix, mb);
	add(b, buf);
}

static unsigned long long heap_mb(uint64_t memory_bytes)
{
	unsigned long long mb = memory_bytes / 2 / (1024 * 1024);

	return mb < JVM_MIN_HEAP_MB ? JVM_MIN_HEAP_MB : mb;
}

int al_plan_compiled(const al_lang_row *row, const al_toolchain *tc,
		     const char *script_path, const char *build_dir,
		     char *const *args, size_t nargs, const al_plan_opts *opts,
		     al_plan *out)
{
	vec build = { NULL, 0 }, run = { NULL, 0 }, env = { NULL, 0 };
	char artifact[4096];

	snprintf(artifact, sizeof(artifact), "%s/main", build_dir);
	add(&build, tc->path);
	switch (row->probe) {
	case AL_PROBE_GCC:
		add(&build, strcmp(row->language, "c") == 0 ? "-std=gnu17" : "-std=gnu++17");
		add(&build, "-O2");
		for (size_t i = 0; i < opts->n_flags; i++)
			add(&build, opts->flags[i]);
		add(&build, "-o");
		add(&build, artifact);
		add(&build, script_path);
		add(&build, "-lm");
		add(&run, artifact);
		break;
	case AL_PROBE_GO:
		add(&build, "build");
		/* no -trimpath: it changes every package's build id, so the
		 * whole standard library would be compiled again (~12 s
		 * instead of ~0.5 s here) */
		add(&build, "-o");
		add(&build, artifact);
		add(&build, script_path);
		/* No module download, no toolchain switch, no cgo (no C
		 * compiler in the loop); the build cache lives in the
		 * sandbox's own /tmp and dies with it. */
		add(&env, "GOCACHE=/tmp/go-cache");
		add(&env, "GOPATH=/tmp/go");
		add(&env, "GOENV=off");
		add(&env, "GOFLAGS=-mod=mod -p=2");
		/* threads count against the build's pids limit: bounded
		 * whatever the host's core count */
		add(&env, "GOMAXPROCS=2");
		add(&env, "GOPROXY=off");
		add(&env, "GOTOOLCHAIN=local");
		add(&env, "GOWORK=off");
		add(&env, "CGO_ENABLED=0");
		add(&run, artifact);
		break;
	case AL_PROBE_RUST:
		add(&build, "--edition=2021");
		add(&build, "-Copt-level=2");
		for (size_t i = 0; i < opts->n_flags; i++)
			add(&build, opts->flags[i]);
		add(&build, "-o");
		add(&build, artifact);
		add(&build, script_path);
		add(&run, artifact);
		break;
	case AL_PROBE_JAVA:
		add(&build, "-J-XX:+UseSerialGC");
		add(&build, "-J-XX:TieredStopAtLevel=1");
		add(&build, "-J-XX:-UsePerfData");
		if (opts->build_memory_bytes)
			add_heap(&build, "-J-Xmx", heap_mb(opts->build_memory_bytes));
		add(&build, "-encoding");
		add(&build, "UTF-8");
		for (size_t i = 0; i < opts->n_flags; i++)
			add(&build, opts->flags[i]);
		add(&build, "-d");
		add(&build, build_dir);
		add(&build, script_path);
		add(&run, tc->helper_path);
		add(&run, "-XX:+UseSerialGC");
		add(&run, "-XX:TieredStopAtLevel=1");
		add(&run, "-XX:-UsePerfData");
		if (opts->run_memory_bytes)
			add_heap(&run, "-Xmx", heap_mb(opts->run_memory_bytes));
		add(&run, "-cp");
		add(&run, build_dir);
		add(&run, "Main");
		break;
	default:
		build.rc = -EINVAL;
		break;
	}
	if (row->probe == AL_PROBE_JAVA && !tc->helper_path)
		build.rc = -EINVAL;
	for (size_t i = 0; i < nargs; i++)
		add(&run, args[i]);
	if (build.rc || run.rc || env.rc) {
		int rc = build.rc ? build.rc : run.rc ? run.rc : env.rc;

		al_strv_free_all(build.v);
		al_strv_free_all(run.v);
		al_strv_free_all(env.v);
		return rc;
	}
	out->build_argv = build.v;
	out->run_argv = run.v;
	out->build_env = env.v;
	return 0;
}

/* ---- build flags ---- */

static bool word(const char *s, const char *extra)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr(extra, *s))
			return false;
	return true;
}

static bool one_of(const char *f, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(f, list[i]) == 0)
			return true;
	return false;
}

static const char *const gcc_exact[] = {
	"-O0", "-O1", "-O2", "-O3", "-Os", "-Og", "-g", "-Wall", "-Wextra",
	"-Werror", "-pedantic", "-pthread", "-fno-exceptions", NULL,
};
static const char *const rust_exact[] = {
	"-O", "-g", "--edition=2015", "--edition=2018", "--edition=2021",
	"-Copt-level=0", "-Copt-level=1", "-Copt-level=2", "-Copt-level=3",
	"-Copt-level=s", "-Copt-level=z", "-Coverflow-checks=on",
	"-Coverflow-checks=off", NULL,
};
static const char *const java_exact[] = { "-g", "-Xlint", "-Xlint:all", "-nowarn", NULL };

/* Only flags that change code generation or diagnostics: nothing that
 * names a file, a plugin, a wrapper or another program. */
static bool flag_allowed(const al_lang_row *row, const char *f)
{
	switch (row->probe) {
	case AL_PROBE_GCC:
		if (one_of(f, gcc_exact))
			return true;
		if (strncmp(f, "-std=", 5) == 0)
			return word(f + 5, "+");
		if (strncmp(f, "-W", 2) == 0 && strncmp(f, "-Wl", 3) != 0 &&
		    strncmp(f, "-Wa", 3) != 0 && strncmp(f, "-Wp", 3) != 0)
			return word(f + 2, "-=");
		if (strncmp(f, "-D", 2) == 0) {
			const char *eq = strchr(f, '=');
			size_t n = eq ? (size_t)(eq - f - 2) : strlen(f + 2);
			char name[64];

			if (n == 0 || n >= sizeof(name) || isdigit((unsigned char)f[2]))
				return false;
			memcpy(name, f + 2, n);
			name[n] = '\0';
			return word(name, "_") && (!eq || !eq[1] || word(eq + 1, "_.-"));
		}
		return false;
	case AL_PROBE_RUST:
		return one_of(f, rust_exact);
	case AL_PROBE_JAVA:
		return one_of(f, java_exact);
	default:
		return false;
	}
}

int al_build_flags_check(const char *language, char *const *flags, size_t n,
			 al_error **err)
{
	const al_lang_row *row = al_lang_row_find(language);

	if (n == 0)
		return 0;
	if (!row || !al_lang_row_compiled(row))
		return al_error_set(err, AL_ERR_INVALID_REQUEST, EINVAL, "build_flags",
				    "%s has no build step to take flags",
				    language ? language : "this language");
	if (n > AL_MAX_BUILD_FLAGS)
		return al_error_set(err, AL_ERR_INVALID_REQUEST, EINVAL, "build_flags",
				    "at most %d build flags", AL_MAX_BUILD_FLAGS);
	for (size_t i = 0; i < n; i++) {
		if (!flags[i] || strlen(flags[i]) > 64 || !flag_allowed(row, flags[i]))
			return al_error_set(err, AL_ERR_INVALID_REQUEST, EINVAL, "build_flags",
					    "build_flags[%zu] is not a flag %s accepts "
					    "(docs/languages.md)", i, language);
	}
	return 0;
}
