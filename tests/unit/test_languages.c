/* Unit tests for src/lang: version parsing and constraints, observation
 * (shims, absence, caching, timeouts), TypeScript helper resolution and
 * argv plans. */
#include <errno.h>
#include <glob.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "lang/languages.h"
#include "lang/table.h"
#include "lang/locate.h"
#include "lang/observe.h"

/* Debian's interpreter, present on the CI machine (see BRIEF). */
#define SYSTEM_PYTHON "/usr/bin/python3"

static char tmp_root[256];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int group_setup(void **state)
{
	(void)state;
	snprintf(tmp_root, sizeof(tmp_root), "/tmp/al-lang-test.XXXXXX");
	return mkdtemp(tmp_root) ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	al_toolchain_cache_reset();
	return nftw(tmp_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A fresh directory below tmp_root. */
static char *make_dir(const char *name)
{
	char *p = NULL;

	assert_true(asprintf(&p, "%s/%s", tmp_root, name) > 0);
	assert_int_equal(mkdir(p, 0755), 0);
	return p;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	char tmp[PATH_MAX];
	int fd;

	/* Write beside and rename, so a running interpreter never sees a
	 * half-written script and each version is a new file. */
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(close(fd), 0);
	assert_int_equal(rename(tmp, path), 0);
}

static void copy_file(const char *from, const char *to)
{
	char tmp[PATH_MAX], buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	snprintf(tmp, sizeof(tmp), "%s.new", to);
	assert_true(in >= 0);
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	assert_true(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	assert_int_equal(n, 0);
	close(in);
	assert_int_equal(close(out), 0);
	assert_int_equal(rename(tmp, to), 0);
}

static int count_lines(const char *path)
{
	FILE *f = fopen(path, "re");
	int n = 0, c;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static bool has_root(const al_toolchain *tc, const char *dir)
{
	for (size_t i = 0; tc->extra_roots && tc->extra_roots[i]; i++) {
		if (strcmp(tc->extra_roots[i], dir) == 0)
			return true;
	}
	return false;
}

static size_t nroots(const al_toolchain *tc)
{
	size_t n = 0;

	while (tc->extra_roots && tc->extra_roots[n])
		n++;
	return n;
}

/* ---- the table ---- */

static void test_table(void **state)
{
	static const char *const want[][2] = {
		{ "sh", "main.sh" },	     { "bash", "main.sh" },
		{ "python", "main.py" },     { "javascript", "main.js" },
		{ "typescript", "main.ts" }, { "ruby", "main.rb" },
		{ "powershell", "main.ps1" }, { "c", "main.c" },
		{ "cpp", "main.cpp" },	     { "go", "main.go" },
		{ "rust", "main.rs" },	     { "java", "Main.java" },
	};
	const char *const *names = al_language_names();
	size_t n = 0;

	(void)state;
	while (names[n])
		n++;
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(names[i], want[i][0]);
		assert_true(al_language_known(want[i][0]));
		assert_string_equal(al_language_script_name(want[i][0]), want[i][1]);
	}
	assert_false(al_language_known("cobol"));
	assert_false(al_language_known(NULL));
	assert_null(al_language_script_name("Python"));
}

/* ---- versions ---- */

/* Compiled plans: build into the build dir, run the artifact; flags
 * only from the allow-list. */
static void test_compiled_plans(void **state)
{
	al_toolchain tc = { .language = (char *)"c", .toolchain = (char *)"c",
			    .version = (char *)"12.2.0", .path = (char *)"/usr/bin/gcc" };
	char *flags[] = { (char *)"-O0", (char *)"-DN=3", NULL };
	char *args[] = { (char *)"x", NULL };
	al_plan_opts opts = { .flags = flags, .n_flags = 2 };
	al_plan plan;
	al_error *err = NULL;

	(void)state;
	assert_int_equal(al_toolchain_plan_with(&tc, "/code/main.c", "/build", args, 1,
						&opts, &plan, NULL), 0);
	assert_string_equal(plan.build_argv[0], "/usr/bin/gcc");
	assert_string_equal(plan.build_argv[3], "-O0");
	assert_string_equal(plan.build_argv[4], "-DN=3");
	assert_string_equal(plan.run_argv[0], "/build/main");
	assert_string_equal(plan.run_argv[1], "x");
	assert_null(plan.run_argv[2]);
	al_plan_free(&plan);
	/* no build dir: refused */
	assert_int_equal(al_toolchain_plan_with(&tc, "/code/main.c", NULL, NULL, 0, NULL,
						&plan, NULL), -EINVAL);
	static const char *const bad[] = { "-fplugin=/x.so", "-B/tmp", "@/etc/passwd",
					   "-Wl,-T,/etc/shadow", "-include/etc/shadow",
					   "-o/tmp/x", "-DA B", NULL };
	for (size_t i = 0; bad[i]; i++) {
		char *one[] = { (char *)bad[i], NULL };

		assert_int_equal(al_build_flags_check("c", one, 1, &err), -EINVAL);
		assert_string_equal(al_error_get_reason(err), "build_flags");
		al_error_free(err);
		err = NULL;
	}
	char *ok[] = { (char *)"-std=c11", (char *)"-Wall", (char *)"-O3", NULL };
	assert_int_equal(al_build_flags_check("c", ok, 3, NULL), 0);
	char *rs[] = { (char *)"-Copt-level=0", NULL };
	assert_int_equal(al_build_flags_check("rust", rs, 1, NULL), 0);
	assert_int_equal(al_build_flags_check("python", rs, 1, NULL), -EINVAL);
	assert_int_equal(al_build_flags_check("go", rs, 1, NULL), -EINVAL);
	/* java runs with the JDK's java and a heap from the memory limit */
	al_toolchain jc = { .language = (char *)"java", .toolchain = (char *)"java",
			    .version = (char *)"17.0.15", .path = (char *)"/j/bin/javac",
			    .helper_path = (char *)"/j/bin/java" };
	al_plan_opts mem = { .run_memory_bytes = 256u << 20 };
	assert_int_equal(al_toolchain_plan_with(&jc, "/code/Main.java", "/build", NULL, 0,
						&mem, &plan, NULL), 0);
	assert_string_equal(plan.run_argv[0], "/j/bin/java");
	bool xmx = false;
	for (size_t i = 0; plan.run_argv[i]; i++)
		xmx = xmx || strcmp(plan.run_argv[i], "-Xmx128m") == 0;
	assert_true(xmx);
	al_plan_free(&plan);
}

static void test_version_parse(void **state)
{
	/* Real outputs of the tools' version flags / probes. */
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "Python 3.11.7\n", "3.11.7" },
		{ "Python 3.11.2", "3.11.2" },
		{ "Python 2.7.18", "2.7.18" },
		{ "3.11.7 (main, May  9 2026, 07:35:25) [GCC 12.2.0]", "3.11.7" },
		{ "3.13.0rc1 (main, Oct  1 2024) [GCC 12.2.0]", "3.13.0" },
		{ "v20.20.2\n", "20.20.2" },
		{ "v23.6.0", "23.6.0" },
		{ "GNU bash, version 5.2.15(1)-release (x86_64-pc-linux-gnu)\n"
		  "Copyright (C) 2022 Free Software Foundation, Inc.\n",
		  "5.2.15" },
		{ "ruby 3.1.2p20 (2022-04-12 revision 4491bb740a) [x86_64-linux-gnu]", "3.1.2" },
		{ "3.1.2", "3.1.2" },
		{ "PowerShell 7.4.1", "7.4.1" },
		{ "7.4.1", "7.4.1" },
		{ "dash (0.5.12-2) unstable; urgency=medium", "0.5.12" },
		{ "zsh 5.9 (x86_64-debian-linux-gnu)", "5.9" },
		{ "0.28.2\n", "0.28.2" },
		{ "x86_64 build, version 1.2", "1.2" },
	};
	static const char *const bad[] = { "", "Python", "version 5", "x86_64",
					   "ruby3.1 only", "1.", ".5" };
	char out[32];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(al_version_parse(cases[i].text, out, sizeof(out)), 0);
		assert_string_equal(out, cases[i].want);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(al_version_parse(bad[i], out, sizeof(out)), -EINVAL);
	assert_int_equal(al_version_parse("Python 3.11.7", out, 6), -ERANGE);
	assert_int_equal(al_version_parse("Python 3.11.7", out, 7), 0);
	assert_string_equal(out, "3.11.7");
	assert_int_equal(al_version_parse(NULL, out, sizeof(out)), -EINVAL);
}

static void test_version_satisfies(void **state)
{
	static const struct {
		const char *version, *constraint;
		int want;
	} cases[] = {
		{ "3.11.2", "3.11.2", 1 },	 { "3.11.7", "3.11.2", 0 },
		{ "3.11.7", "3.11", 1 },	 { "3.12.0", "3.11", 0 },
		{ "3.1.0", "3.11", 0 },		 { "3.11", "3.11.0", 0 },
		{ "3.11.7", "3", 1 },		 { "3.11.7", "==3.11.7", 1 },
		{ "3.11.7", "==3.11", 0 },	 { "3.11.0", "==3.11", 1 },
		{ "3.11", "==3.11.0", 1 },	 { "3.11.7", ">=3.10", 1 },
		{ "3.10.0", ">=3.10", 1 },	 { "3.9.18", ">=3.10", 0 },
		{ "3.10.0", ">3.10", 0 },	 { "3.10.1", ">3.10", 1 },
		{ "4.0", ">3", 1 },		 { "3.0.0", ">3", 0 },
		{ "4.1", "<=4.1", 1 },		 { "4.1.1", "<=4.1", 0 },
		{ "3.99.99", "<4", 1 },		 { "4.0.0", "<4", 0 },
		/* numeric, not lexical */
		{ "3.9.0", "<3.10", 1 },	 { "3.10.0", "<3.9", 0 },
		{ "20.20.2", ">=9", 1 },	 { "5.2.15", ">=5.2.9", 1 },
		/* conjunctions */
		{ "3.11.7", ">=3.10,<4", 1 },	 { "4.0.1", ">=3.10,<4", 0 },
		{ "3.9.1", ">=3.10,<4", 0 },	 { "3.11.7", " >= 3.10 , < 4 ", 1 },
		{ "3.11.7", ">=3,<=3.11.7,3.11", 1 },
		{ "3.11.7", ">=3,<=3.11.6", 0 },
	};
	static const char *const malformed[] = {
		"",	  " ",	     ",",      ">=3.10,", ",>=3",  ">=",   "=>3",
		"~=3.1",  "!=3",     "3.x",    "3.",	   ".3",   "3..1", "v3",
		"3 .1",	  ">= 3 4",  "abc",    "=3",	   "<<3",  ">=3,,<4",
		"1234567890.1",	     "1.2.3.4.5.6.7.8.9",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (al_version_satisfies(cases[i].version, cases[i].constraint) != cases[i].want)
			fail_msg("%s vs \"%s\": want %d", cases[i].version,
				 cases[i].constraint, cases[i].want);
	}
	for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
		if (al_version_satisfies("3.11.7", malformed[i]) != -EINVAL)
			fail_msg("\"%s\" should be malformed", malformed[i]);
	}
	/* A malformed clause after a failing one is still reported. */
	assert_int_equal(al_version_satisfies("2.0", ">=3,junk"), -EINVAL);
	assert_int_equal(al_version_satisfies("3.x", ">=3"), -EINVAL);
	assert_int_equal(al_version_satisfies("", ">=3"), -EINVAL);
	assert_int_equal(al_version_satisfies(NULL, ">=3"), -EINVAL);
	assert_int_equal(al_version_satisfies("3.1", NULL), -EINVAL);
}

/* ---- probe output and dpkg parsing ---- */

static void test_observe_parse(void **state)
{
	char *text = NULL, *vtext = NULL, *exe = NULL, **dirs = NULL;
	char *libdir = make_dir("parse-lib");
	char lib[PATH_MAX];

	(void)state;
	snprintf(lib, sizeof(lib), "%s/libfake.so.1", libdir);
	write_file(lib, "not really a library\n", 0644);
	assert_true(asprintf(&text,
			     "V 3.11.7 (main, May  9 2026) [GCC 12.2.0]\n"
			     "E /opt/py/bin/python3.11\n"
			     "P /opt/py\n"
			     "P /opt/py\n"
			     "P relative/ignored\n"
			     "55d0c-55d0d r--p 00000000 08:01 123   /usr/bin/dash\n"
			     "7f00-7f01 r-xp 00000000 08:01 456   %s\n"
			     "7f01-7f02 r--p 00001000 08:01 456   %s\n"
			     "7f02-7f03 rw-p 00000000 00:00 0 \n"
			     "7f03-7f04 rw-p 00000000 00:00 0   [heap]\n"
			     "7f04-7f05 rw-s 00000000 00:01 9   /memfd:x (deleted)\n",
			     lib, lib) > 0);
	assert_int_equal(al_observe_parse(text, &vtext, &exe, &dirs), 0);
	assert_string_equal(vtext, "3.11.7 (main, May  9 2026) [GCC 12.2.0]");
	assert_string_equal(exe, "/opt/py/bin/python3.11");
	assert_non_null(dirs);
	assert_string_equal(dirs[0], "/opt/py");
	assert_string_equal(dirs[1], "/usr/bin");
	assert_string_equal(dirs[2], libdir);
	assert_null(dirs[3]);
	free(vtext);
	free(exe);
	for (size_t i = 0; dirs[i]; i++)
		free(dirs[i]);
	free(dirs);
	free(text);

	/* No executable line: not a usable answer. */
	assert_int_equal(al_observe_parse("V 1.2.3\n", &vtext, &exe, &dirs), -EINVAL);
	assert_null(vtext);
	assert_null(exe);
	assert_null(dirs);
	free(libdir);
}

static void test_dpkg_version(void **state)
{
	char *dir = make_dir("dpkg");
	char file[PATH_MAX], out[32];

	(void)state;
	snprintf(file, sizeof(file), "%s/status", dir);
	write_file(file,
		   "Package: dashboard\nStatus: install ok installed\nVersion: 9.9.9\n\n"
		   "Package: dash\nStatus: deinstall ok config-files\nVersion: 0.5.11-1\n\n"
		   "Package: dash\nStatus: install ok installed\nPriority: required\n"
		   "Version: 0.5.12-2\nDescription: POSIX shell\n more\n\n"
		   "Package: mksh\nStatus: install ok installed\nVersion: 1:2.3.4-28\n\n"
		   "Package: yash\nStatus: install ok installed\nVersion: 59c-1\n",
		   0644);
	assert_int_equal(al_dpkg_version(file, "dash", out, sizeof(out)), 0);
	assert_string_equal(out, "0.5.12");
	/* Epoch dropped; a stanza without a trailing blank line. */
	assert_int_equal(al_dpkg_version(file, "mksh", out, sizeof(out)), 0);
	assert_string_equal(out, "2.3.4");
	/* No dotted version. */
	assert_int_equal(al_dpkg_version(file, "yash", out, sizeof(out)), -EINVAL);
	assert_int_equal(al_dpkg_version(file, "bash", out, sizeof(out)), -ENOENT);
	assert_int_equal(al_dpkg_version("/nonexistent/status", "dash", out, sizeof(out)),
			 -ENOENT);
	free(dir);
}

/* ---- observation ---- */

static void expect_absent(const char *language, const char *path_env)
{
	al_toolchain *tc = (al_toolchain *)1;
	al_error *err = NULL;

	assert_int_equal(al_toolchain_observe(language, path_env, NULL, &tc, &err), -ENOENT);
	assert_null(tc);
	assert_non_null(err);
	assert_int_equal(al_error_get_code(err), AL_ERR_UNAVAILABLE);
	assert_string_equal(al_error_get_reason(err), "toolchain_absent");
	assert_non_null(strstr(al_error_get_message(err), language));
	al_error_free(err);
}

static void test_absent(void **state)
{
	char *empty = make_dir("empty-path");
	const char *const *names = al_language_names();
	char *pwsh = NULL;
	al_error *err = NULL;
	al_toolchain *tc = NULL;

	(void)state;
	for (size_t i = 0; names[i]; i++)
		expect_absent(names[i], empty);
	/* A relative or empty PATH entry never means ".". */
	expect_absent("python", ":.:bin");

	/* pwsh is not installed here: observing it is absent, with a reason. */
	if (al_path_find(getenv("PATH"), "pwsh", &pwsh) == -ENOENT) {
		expect_absent("powershell", NULL);
	} else {
		assert_int_equal(al_toolchain_observe("powershell", NULL, NULL, &tc, &err), 0);
		assert_string_equal(tc->toolchain, "pwsh");
		al_toolchain_free(tc);
	}
	free(pwsh);

	assert_int_equal(al_toolchain_observe("cobol", NULL, NULL, &tc, &err), -EINVAL);
	assert_int_equal(al_error_get_code(err), AL_ERR_INVALID_ARGUMENT);
	al_error_free(err);
	free(empty);
}

/* A pyenv-style shim (a script that execs the real interpreter) is seen
 * through: the observed path is the interpreter itself. */
static void test_shim_resolved(void **state)
{
	char *dir = make_dir("shim");
	char shim[PATH_MAX], *real = realpath(SYSTEM_PYTHON, NULL);
	al_toolchain *tc = NULL;
	al_error *err = NULL;
	char out[32];

	(void)state;
	assert_non_null(real);
	snprintf(shim, sizeof(shim), "%s/python3", dir);
	write_file(shim, "#!/bin/sh\nexec " SYSTEM_PYTHON " \"$@\"\n", 0755);
	assert_int_equal(al_toolchain_observe("python", dir, NULL, &tc, &err), 0);
	assert_null(err);
	assert_string_equal(tc->language, "python");
	assert_string_equal(tc->toolchain, "python");
	assert_string_equal(tc->path, real);
	assert_true(al_file_is_elf(tc->path));
	assert_int_equal(al_version_parse(tc->version, out, sizeof(out)), 0);
	assert_string_equal(out, tc->version);
	/* Debian's python lives entirely in system dirs. */
	assert_int_equal(nroots(tc), 0);
	assert_null(tc->helper_path);
	al_toolchain_free(tc);
	free(real);
	free(dir);
}

/* With the process's own PATH (here: a pyenv shim first), every present
 * language reports a real binary whose files are in system dirs or below
 * an extra root. */
static void test_observe_host(void **state)
{
	const char *const *names = al_language_names();
	const char *path_env = getenv("PATH");

	(void)state;
	for (size_t i = 0; names[i]; i++) {
		al_toolchain *tc = NULL;
		al_error *err = NULL;
		char *first = NULL;
		int rc = al_toolchain_observe(names[i], path_env, NULL, &tc, &err);
		bool covered;

		if (rc == -ENOENT) {
			printf("  %-10s absent: %s\n", names[i], al_error_get_message(err));
			al_error_free(err);
			continue;
		}
		assert_int_equal(rc, 0);
		printf("  %-10s %s %s %s", names[i], tc->toolchain, tc->version, tc->path);
		for (size_t r = 0; tc->extra_roots[r]; r++)
			printf(" root=%s", tc->extra_roots[r]);
		printf("%s%s\n", tc->helper_path ? " helper=" : "",
		       tc->helper_path ? tc->helper_path : "");
		assert_true(al_file_is_elf(tc->path));
		covered = al_path_is_system(tc->path);
		for (size_t r = 0; tc->extra_roots[r]; r++) {
			size_t n = strlen(tc->extra_roots[r]);

			/* java's configuration dir under /etc is a root of its
			 * own: the sandbox shows only a few files of /etc */
			assert_false(al_path_is_system(tc->extra_roots[r]) &&
				     strncmp(tc->extra_roots[r], "/etc/", 5) != 0);
			covered = covered || (strncmp(tc->path, tc->extra_roots[r], n) == 0 &&
					      tc->path[n] == '/');
		}
		assert_true(covered);
		if (strcmp(names[i], "python") == 0) {
			/* The shim is not what runs. */
			assert_int_equal(al_path_find(path_env, "python3", &first), 0);
			if (al_file_is_script(first))
				assert_string_not_equal(first, tc->path);
			free(first);
		}
		al_toolchain_free(tc);
	}
}

/* Shim that counts its runs, in front of a copy of a real interpreter
 * that can be touched or replaced. */
static void test_cache(void **state)
{
	char *shims = make_dir("cache-shims");
	char *realdir = make_dir("cache-real");
	char *cache = NULL, *canon_realdir;
	char counter[PATH_MAX], shim[PATH_MAX], interp[PATH_MAX], script[PATH_MAX * 3];
	char cache_file[PATH_MAX];
	al_toolchain *tc = NULL;
	al_error *err = NULL;
	struct stat st;
	json_t *j;

	(void)state;
	al_toolchain_cache_reset();
	assert_true(asprintf(&cache, "%s/cache", tmp_root) > 0);
	canon_realdir = realpath(realdir, NULL);
	snprintf(counter, sizeof(counter), "%s/runs", tmp_root);
	snprintf(shim, sizeof(shim), "%s/python3", shims);
	snprintf(interp, sizeof(interp), "%s/python3", realdir);
	snprintf(script, sizeof(script), "#!/bin/sh\necho run >> %s\nexec %s \"$@\"\n",
		 counter, interp);
	copy_file(SYSTEM_PYTHON, interp);
	write_file(shim, script, 0755);

	/* First observation runs the interpreter once. */
	assert_int_equal(al_toolchain_observe("python", shims, cache, &tc, &err), 0);
	assert_int_equal(count_lines(counter), 1);
	assert_string_equal(tc->path, interp);
	/* A copy outside the system dirs: its directory is an extra root. */
	assert_true(has_root(tc, canon_realdir));
	al_toolchain_free(tc);

	/* In-process hit. */
	assert_int_equal(al_toolchain_observe("python", shims, cache, &tc, &err), 0);
	assert_int_equal(count_lines(counter), 1);
	al_toolchain_free(tc);

	/* The disk cache: one small private JSON file. */
	{
		/* Named for the PATH and candidate: exactly one python file. */
		char pattern[PATH_MAX];
		glob_t g;

		snprintf(pattern, sizeof(pattern), "%s/python-*.json", cache);
		assert_int_equal(glob(pattern, 0, NULL, &g), 0);
		assert_int_equal(g.gl_pathc, 1);
		snprintf(cache_file, sizeof(cache_file), "%s", g.gl_pathv[0]);
		globfree(&g);
	}
	assert_int_equal(stat(cache_file, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	j = json_load_file(cache_file, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(j, "toolchain"), "path")),
			    interp);
	json_decref(j);

	/* Disk hit after the process forgets. */
	al_toolchain_cache_reset();
	assert_int_equal(al_toolchain_observe("python", shims, cache, &tc, &err), 0);
	assert_int_equal(count_lines(counter), 1);
	assert_string_equal(tc->path, interp);
	assert_true(has_root(tc, canon_realdir));
	al_toolchain_free(tc);

	/* The interpreter is touched: re-observed. */
	{
		struct timespec ts[2] = { { 1000000000, 0 }, { 1000000000, 0 } };

		assert_int_equal(utimensat(AT_FDCWD, interp, ts, 0), 0);
	}
	assert_int_equal(al_toolchain_observe("python", shims, cache, &tc, &err), 0);
	assert_int_equal(count_lines(counter), 2);
	al_toolchain_free(tc);
	assert_int_equal(al_toolchain_observe("python", shims, cache, &tc, &err), 0);
	assert_int_equal(count_lines(counter), 2);
	al_toolchain_free(tc);

	/* The interpreter is replaced (new inode): re-observed, also after
	 * the process forgot (the disk entry no longer matches). */
	copy_file(SYSTEM_PYTHON, interp);
	al_toolchain_cache_reset();
	assert_int_equal(al_toolchain_observe("python", shims, cache, &tc, &err), 0);
	assert_int_equal(count_lines(counter), 3);
	al_toolchain_free(tc);

	/* Another PATH value is another key. */
	{
		char *path2 = NULL;

		assert_true(asprintf(&path2, "%s:/nonexistent", shims) > 0);
		assert_int_equal(al_toolchain_observe("python", path2, cache, &tc, &err), 0);
		assert_int_equal(count_lines(counter), 4);
		al_toolchain_free(tc);
		free(path2);
	}

	/* A corrupt cache file is ignored, then rewritten. */
	al_toolchain_cache_reset();
	write_file(cache_file, "{not json", 0600);
	assert_int_equal(al_toolchain_observe("python", shims, cache, &tc, &err), 0);
	assert_int_equal(count_lines(counter), 5);
	al_toolchain_free(tc);
	/* A cache file others can write is not trusted. */
	al_toolchain_cache_reset();
	assert_int_equal(chmod(cache_file, 0666), 0);
	assert_int_equal(al_toolchain_observe("python", shims, cache, &tc, &err), 0);
	assert_int_equal(count_lines(counter), 6);
	al_toolchain_free(tc);
	assert_null(err);

	al_toolchain_cache_reset();
	free(canon_realdir);
	free(cache);
	free(shims);
	free(realdir);
}

static void *observe_thread(void *arg)
{
	al_toolchain *tc = NULL;
	intptr_t rc = al_toolchain_observe("python", (const char *)arg, NULL, &tc, NULL);

	if (rc == 0 && strcmp(tc->path, "/") == 0)
		rc = -EINVAL;
	al_toolchain_free(tc);
	return (void *)rc;
}

static void test_threads(void **state)
{
	pthread_t t[4];

	(void)state;
	al_toolchain_cache_reset();
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, observe_thread, (void *)"/usr/bin"), 0);
	for (size_t i = 0; i < 4; i++) {
		void *rc = NULL;

		assert_int_equal(pthread_join(t[i], &rc), 0);
		assert_int_equal((intptr_t)rc, 0);
	}
}

/* A hung interpreter is given up on within the bound, and everything it
 * started is killed. */
static void test_probe_timeout(void **state)
{
	char *dir = make_dir("hang");
	char shim[PATH_MAX], pidfile[PATH_MAX], script[PATH_MAX * 2], buf[32], proc[64];
	al_toolchain *tc = NULL;
	al_error *err = NULL;
	struct timespec a, b;
	long ms;
	pid_t pid;
	FILE *f;
	bool gone = false;

	(void)state;
	snprintf(shim, sizeof(shim), "%s/ruby", dir);
	snprintf(pidfile, sizeof(pidfile), "%s/pid", dir);
	snprintf(script, sizeof(script), "#!/bin/sh\n/bin/sleep 30 &\necho $! > %s\nwait\n", pidfile);
	write_file(shim, script, 0755);
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(al_toolchain_observe("ruby", dir, NULL, &tc, &err), -ETIMEDOUT);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
	/* the row's bound, not much more: the probe is killed then */
	long bound = al_lang_row_find("ruby")->timeout_ms;
	assert_true(ms >= bound - 100 && ms < bound + 5000);
	assert_null(tc);
	assert_int_equal(al_error_get_code(err), AL_ERR_UNAVAILABLE);
	al_error_free(err);

	f = fopen(pidfile, "re");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	pid = (pid_t)atoi(buf);
	assert_true(pid > 1);
	snprintf(proc, sizeof(proc), "/proc/%d/stat", (int)pid);
	/* Killed; gone once its new parent reaps it. */
	for (int i = 0; i < 100 && !gone; i++) {
		char stat_line[256] = "";
		FILE *s = fopen(proc, "re");

		if (!s) {
			gone = true;
			break;
		}
		if (fgets(stat_line, sizeof(stat_line), s) && strstr(stat_line, ") Z "))
			gone = true;
		fclose(s);
		if (!gone)
			usleep(10000);
	}
	assert_true(gone);
	free(dir);
}

/* TypeScript with node < 22.6 needs esbuild: found in the tools dir as
 * node_modules/.bin/esbuild and resolved to the platform package's native
 * binary, whose directory becomes an extra root. */
static void test_typescript_tools_dir(void **state)
{
	char *tools = make_dir("tools");
	char *nodedir = make_dir("tsnode");
	char p[PATH_MAX], native[PATH_MAX], node[PATH_MAX], *canon_bin;
	al_toolchain *js = NULL, *tc = NULL;
	al_error *err = NULL;
	bool strips;

	(void)state;
	/* node alone in a dir: PATH has no esbuild. */
	snprintf(node, sizeof(node), "%s/node", nodedir);
	assert_int_equal(symlink("/usr/bin/node", node), 0);
	assert_int_equal(al_toolchain_observe("javascript", nodedir, NULL, &js, &err), 0);
	strips = al_version_satisfies(js->version, ">=22.6") == 1;

	/* Empty tools dir. */
	assert_int_equal(setenv("AIRLOCK_TOOLS_DIR", tools, 1), 0);
	if (!strips) {
		expect_absent("typescript", nodedir);
	}

	/* npm's layout: .bin link -> esbuild/bin/esbuild (a JS launcher),
	 * the native binary in @esbuild/linux-x64/bin. */
	snprintf(p, sizeof(p), "%s/node_modules", tools);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/node_modules/.bin", tools);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/node_modules/esbuild", tools);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/node_modules/esbuild/bin", tools);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/node_modules/esbuild/bin/esbuild", tools);
	write_file(p, "#!/usr/bin/env node\nrequire('../lib/main.js')\n", 0755);
	snprintf(p, sizeof(p), "%s/node_modules/.bin/esbuild", tools);
	assert_int_equal(symlink("../esbuild/bin/esbuild", p), 0);
	snprintf(p, sizeof(p), "%s/node_modules/@esbuild", tools);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/node_modules/@esbuild/linux-x64", tools);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/node_modules/@esbuild/linux-x64/bin", tools);
	assert_int_equal(mkdir(p, 0755), 0);
	canon_bin = realpath(p, NULL);
	snprintf(native, sizeof(native), "%s/esbuild", canon_bin);
	copy_file("/bin/true", native);

	assert_int_equal(al_toolchain_observe("typescript", nodedir, NULL, &tc, &err), 0);
	assert_null(err);
	assert_string_equal(tc->language, "typescript");
	assert_string_equal(tc->toolchain, "node");
	assert_string_equal(tc->version, js->version);
	assert_string_equal(tc->path, js->path);
	if (strips) {
		assert_null(tc->helper_path);
	} else {
		assert_string_equal(tc->helper_path, native);
		assert_true(has_root(tc, canon_bin));
	}
	al_toolchain_free(tc);
	al_toolchain_free(js);
	unsetenv("AIRLOCK_TOOLS_DIR");
	free(canon_bin);
	free(nodedir);
	free(tools);
}

/* ---- plans ---- */

static al_toolchain *fake_tc(const char *language, const char *path,
			     const char *version, const char *helper)
{
	al_toolchain *tc = calloc(1, sizeof(*tc));

	assert_non_null(tc);
	tc->language = strdup(language);
	tc->toolchain = strdup("x");
	tc->version = strdup(version);
	tc->path = strdup(path);
	tc->extra_roots = calloc(1, sizeof(char *));
	tc->helper_path = helper ? strdup(helper) : NULL;
	return tc;
}

static void expect_argv(char **got, const char *const *want)
{
	size_t i;

	assert_non_null(got);
	for (i = 0; want[i]; i++) {
		assert_non_null(got[i]);
		assert_string_equal(got[i], want[i]);
		assert_string_not_equal(got[i], "-c");
		assert_string_not_equal(got[i], "-e");
	}
	assert_null(got[i]);
}

static void test_plans(void **state)
{
	char *args[] = { "--flag", "", "two words", "-c" };
	const size_t nargs = 4;
	static const struct {
		const char *language, *path, *script;
		const char *const want[12];
	} rows[] = {
		{ "sh", "/usr/bin/dash", "/code/main.sh",
		  { "/usr/bin/dash", "/code/main.sh", "--flag", "", "two words", "-c", NULL } },
		{ "bash", "/usr/bin/bash", "/code/main.sh",
		  { "/usr/bin/bash", "/code/main.sh", "--flag", "", "two words", "-c", NULL } },
		{ "python", "/opt/py/bin/python3.11", "/code/main.py",
		  { "/opt/py/bin/python3.11", "-E", "-s", "/code/main.py", "--flag", "",
		    "two words", "-c", NULL } },
		{ "javascript", "/usr/bin/node", "/code/main.js",
		  { "/usr/bin/node", "/code/main.js", "--flag", "", "two words", "-c", NULL } },
		{ "ruby", "/usr/bin/ruby3.1", "/code/main.rb",
		  { "/usr/bin/ruby3.1", "/code/main.rb", "--flag", "", "two words", "-c", NULL } },
		{ "powershell", "/opt/microsoft/powershell/7/pwsh", "/code/main.ps1",
		  { "/opt/microsoft/powershell/7/pwsh", "-NoLogo", "-NoProfile",
		    "-NonInteractive", "-File", "/code/main.ps1", "--flag", "", "two words",
		    "-c", NULL } },
	};
	al_plan plan;
	al_error *err = NULL;
	al_toolchain *tc;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		/* The user's own "-c" is an argument after the script, never
		 * code: check the run argv only up to the script. */
		tc = fake_tc(rows[i].language, rows[i].path, "1.0", NULL);
		assert_int_equal(al_toolchain_plan(tc, rows[i].script, NULL, args, nargs,
						   &plan, &err), 0);
		assert_null(plan.build_argv);
		for (size_t k = 0; rows[i].want[k]; k++)
			assert_string_equal(plan.run_argv[k], rows[i].want[k]);
		for (size_t k = 0; strcmp(plan.run_argv[k], rows[i].script) != 0; k++)
			assert_string_not_equal(plan.run_argv[k], "-c");
		{
			size_t n = 0;

			while (plan.run_argv[n])
				n++;
			assert_string_equal(plan.run_argv[n - 1], "-c");
			assert_string_equal(plan.run_argv[n - 3], "");
		}
		al_plan_free(&plan);
		al_toolchain_free(tc);
	}

	/* TypeScript through esbuild: build into the tmp dir, run the output. */
	tc = fake_tc("typescript", "/usr/bin/node", "20.20.2", "/opt/tools/esbuild");
	assert_int_equal(al_toolchain_plan(tc, "/code/main.ts", "/tmp", args, 3, &plan, &err), 0);
	expect_argv(plan.build_argv,
		    (const char *const[]){ "/opt/tools/esbuild", "/code/main.ts",
					   "--outfile=/tmp/main.js", "--format=cjs",
					   "--platform=node", "--target=node20.20.2",
					   "--log-level=warning", NULL });
	expect_argv(plan.run_argv, (const char *const[]){ "/usr/bin/node", "/tmp/main.js",
							  "--flag", "", "two words", NULL });
	al_plan_free(&plan);
	/* ... which needs a build dir. */
	assert_int_equal(al_toolchain_plan(tc, "/code/main.ts", NULL, args, 3, &plan, &err),
			 -EINVAL);
	assert_int_equal(al_error_get_code(err), AL_ERR_INVALID_ARGUMENT);
	al_error_free(err);
	err = NULL;
	al_toolchain_free(tc);

	/* Node that strips types: behind a flag before 23.6, by default after. */
	tc = fake_tc("typescript", "/usr/bin/node", "22.6.0", NULL);
	assert_int_equal(al_toolchain_plan(tc, "/code/main.ts", NULL, NULL, 0, &plan, &err), 0);
	assert_null(plan.build_argv);
	expect_argv(plan.run_argv,
		    (const char *const[]){ "/usr/bin/node", "--experimental-strip-types",
					   "--disable-warning=ExperimentalWarning",
					   "/code/main.ts", NULL });
	al_plan_free(&plan);
	al_toolchain_free(tc);
	tc = fake_tc("typescript", "/usr/bin/node", "23.6.0", NULL);
	assert_int_equal(al_toolchain_plan(tc, "/code/main.ts", NULL, NULL, 0, &plan, &err), 0);
	expect_argv(plan.run_argv,
		    (const char *const[]){ "/usr/bin/node",
					   "--disable-warning=ExperimentalWarning",
					   "/code/main.ts", NULL });
	al_plan_free(&plan);
	al_toolchain_free(tc);

	/* Bad input. */
	tc = fake_tc("python", "/usr/bin/python3", "3.11.2", NULL);
	assert_int_equal(al_toolchain_plan(tc, "main.py", NULL, NULL, 0, &plan, &err), -EINVAL);
	al_error_free(err);
	err = NULL;
	assert_int_equal(al_toolchain_plan(tc, "/code/main.py", NULL, NULL, 2, &plan, &err),
			 -EINVAL);
	al_error_free(err);
	err = NULL;
	al_toolchain_free(tc);
	tc = fake_tc("cobol", "/usr/bin/cobc", "1.0", NULL);
	assert_int_equal(al_toolchain_plan(tc, "/code/main.cob", NULL, NULL, 0, &plan, &err),
			 -EINVAL);
	al_error_free(err);
	al_toolchain_free(tc);
}

/* A real plan from a real observation runs. */
static void test_plan_from_observation(void **state)
{
	al_toolchain *tc = NULL;
	al_plan plan;
	char *args[] = { "" };

	(void)state;
	assert_int_equal(al_toolchain_observe("bash", "/usr/bin:/bin", NULL, &tc, NULL), 0);
	assert_string_equal(tc->toolchain, "bash");
	assert_int_equal(al_toolchain_plan(tc, "/code/main.sh", NULL, args, 1, &plan, NULL), 0);
	assert_string_equal(plan.run_argv[0], tc->path);
	assert_string_equal(plan.run_argv[1], "/code/main.sh");
	assert_string_equal(plan.run_argv[2], "");
	assert_null(plan.run_argv[3]);
	al_plan_free(&plan);
	al_toolchain_free(tc);

	/* sh: the resolved shell (dash here reports its package version). */
	assert_int_equal(al_toolchain_observe("sh", "/usr/bin:/bin", NULL, &tc, NULL), 0);
	assert_string_equal(tc->toolchain, "sh");
	assert_true(al_file_is_elf(tc->path));
	assert_int_equal(al_version_satisfies(tc->version, ">=0.1"), 1);
	al_toolchain_free(tc);
}

/* sh is whatever shell the link resolves to; one we cannot version, or a
 * shell script standing in for bash, is absent rather than guessed at. */
static void test_sh_variants(void **state)
{
	char *as_bash = make_dir("sh-bash");
	char *as_other = make_dir("sh-other");
	char *bash_shim = make_dir("bash-shim");
	char p[PATH_MAX];
	al_toolchain *sh = NULL, *bash = NULL;

	(void)state;
	snprintf(p, sizeof(p), "%s/sh", as_bash);
	assert_int_equal(symlink("/usr/bin/bash", p), 0);
	assert_int_equal(al_toolchain_observe("sh", as_bash, NULL, &sh, NULL), 0);
	assert_int_equal(al_toolchain_observe("bash", "/usr/bin", NULL, &bash, NULL), 0);
	assert_string_equal(sh->toolchain, "sh");
	assert_string_equal(sh->path, bash->path);
	assert_string_equal(sh->version, bash->version);
	al_toolchain_free(sh);
	al_toolchain_free(bash);

	snprintf(p, sizeof(p), "%s/sh", as_other);
	assert_int_equal(symlink("/bin/true", p), 0);
	expect_absent("sh", as_other);

	snprintf(p, sizeof(p), "%s/bash", bash_shim);
	write_file(p, "#!/bin/sh\nexec /usr/bin/bash \"$@\"\n", 0755);
	expect_absent("bash", bash_shim);
	free(as_bash);
	free(as_other);
	free(bash_shim);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_compiled_plans),
		cmocka_unit_test(test_version_parse),
		cmocka_unit_test(test_version_satisfies),
		cmocka_unit_test(test_observe_parse),
		cmocka_unit_test(test_dpkg_version),
		cmocka_unit_test(test_absent),
		cmocka_unit_test(test_shim_resolved),
		cmocka_unit_test(test_observe_host),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_probe_timeout),
		cmocka_unit_test(test_typescript_tools_dir),
		cmocka_unit_test(test_plans),
		cmocka_unit_test(test_plan_from_observation),
		cmocka_unit_test(test_sh_variants),
	};

	/* Children are reaped by us; a stray SIGPIPE must not kill the test. */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
