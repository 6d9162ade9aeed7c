/* Fresh observation of compilers (c, c++, go, rust, java): the real
 * binary behind the name found on PATH and its own version; see
 * observe_compiled.h and docs/languages.md. */
#include "lang/observe_compiled.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lang/locate.h"
#include "lang/probe_run.h"

#define PROBE_MAX_OUT (64 * 1024)
#define VERSION_MAX 32

static int probe(const al_lang_row *row, char *const argv[],
		 const char *path_env, char **text, al_error **err)
{
	const char *home = getenv("HOME");
	char *path_var = NULL, *home_var = NULL;
	int status = 0, rc;

	*text = NULL;
	if (asprintf(&path_var, "PATH=%s", path_env) < 0)
		path_var = NULL;
	if (asprintf(&home_var, "HOME=%s", home && home[0] == '/' ? home : "/") < 0)
		home_var = NULL;
	if (!path_var || !home_var) {
		free(path_var);
		free(home_var);
		al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL, "out of memory");
		return -ENOMEM;
	}
	char *envp[] = { path_var, home_var, (char *)"LC_ALL=C", NULL };
	rc = al_probe_run(argv, envp, row->timeout_ms, PROBE_MAX_OUT, text, &status);
	free(path_var);
	free(home_var);
	if (rc == -ETIMEDOUT) {
		al_error_set(err, AL_ERR_UNAVAILABLE, ETIMEDOUT, "toolchain_probe",
			     "%s: %s did not answer within %d ms", row->language,
			     argv[0], row->timeout_ms);
		return -ETIMEDOUT;
	}
	if (rc == -ENOMEM) {
		al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL, "out of memory");
		return -ENOMEM;
	}
	if (rc) {
		al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "toolchain_absent",
			     "%s: cannot run %s: %s", row->language, argv[0],
			     strerror(-rc));
		return -ENOENT;
	}
	if (status != 0 || *text == NULL) {
		free(*text);
		*text = NULL;
		al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "toolchain_absent",
			     "%s: %s exited with status %d when asked for its version",
			     row->language, argv[0], status);
		return -ENOENT;
	}
	return 0;
}

static int absent(const al_lang_row *row, al_error **err, const char *what,
		  const char *path)
{
	al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "toolchain_absent",
		     "%s: %s %s", row->language, path, what);
	return -ENOENT;
}

/* The real binary a name on PATH resolves to; a script is refused. */
static int resolve_binary(const al_lang_row *row, const char *candidate,
			  char **real, al_error **err)
{
	*real = realpath(candidate, NULL);
	if (!*real)
		return absent(row, err, "cannot be resolved", candidate);
	if (!al_file_is_elf(*real)) {
		free(*real);
		*real = NULL;
		return absent(row, err, "is not a binary (a shim?)", candidate);
	}
	return 0;
}

static void chomp(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		s[--n] = '\0';
}

/* gcc/g++: `-dumpfullversion` prints "12.2.0". */
static int observe_gcc(const al_lang_row *row, const char *candidate,
		       const char *path_env, char **real, char *version,
		       char ***dirs, al_error **err)
{
	char *text = NULL;
	int rc = resolve_binary(row, candidate, real, err);

	(void)dirs;
	if (rc)
		return rc;
	char *argv[] = { *real, (char *)"-dumpfullversion", NULL };
	rc = probe(row, argv, path_env, &text, err);
	if (rc)
		return rc;
	if (al_version_parse(text, version, VERSION_MAX))
		rc = absent(row, err, "gave no version", *real);
	free(text);
	return rc;
}

/* go: `go env GOROOT GOVERSION` (through any wrapper) names the real
 * toolchain; the binary run is GOROOT/bin/go. */
static int observe_go(const al_lang_row *row, const char *candidate,
		      const char *path_env, char **real, char *version,
		      char ***dirs, al_error **err)
{
	char *text = NULL, *root = NULL, *bin = NULL;
	char *argv[] = { (char *)candidate, (char *)"env", (char *)"GOROOT",
			 (char *)"GOVERSION", NULL };
	int rc = probe(row, argv, path_env, &text, err);

	if (rc)
		return rc;
	char *nl = strchr(text, '\n');
	if (!nl || text[0] != '/' || strncmp(nl + 1, "go", 2) != 0) {
		rc = absent(row, err, "did not report GOROOT and GOVERSION", candidate);
		goto out;
	}
	*nl = '\0';
	chomp(nl + 1);
	/* "go1.19.8"; a devel build ("devel go1.22-abc") has no release. */
	if (al_version_parse(nl + 3, version, VERSION_MAX)) {
		rc = absent(row, err, "reported no release version", candidate);
		goto out;
	}
	root = realpath(text, NULL);
	if (!root || asprintf(&bin, "%s/bin/go", root) < 0) {
		bin = NULL;
		rc = absent(row, err, "reported a GOROOT that does not exist", candidate);
		goto out;
	}
	rc = resolve_binary(row, bin, real, err);
	if (!rc)
		rc = al_strv_push(dirs, root);
out:
	free(text);
	free(root);
	free(bin);
	return rc;
}

/* rust: a rustup proxy is seen through with `--print sysroot`; the real
 * compiler is SYSROOT/bin/rustc and answers `--version`. */
static int observe_rust(const al_lang_row *row, const char *candidate,
			const char *path_env, char **real, char *version,
			char ***dirs, al_error **err)
{
	char *text = NULL, *sysroot = NULL, *bin = NULL, *first = NULL;
	int rc;

	first = realpath(candidate, NULL);
	if (!first)
		return absent(row, err, "cannot be resolved", candidate);
	const char *base = strrchr(first, '/') + 1;
	if (strncmp(base, "rustc", 5) == 0) {
		rc = resolve_binary(row, first, real, err);
	} else {
		char *argv[] = { (char *)candidate, (char *)"--print",
				 (char *)"sysroot", NULL };

		rc = probe(row, argv, path_env, &text, err);
		if (rc)
			goto out;
		chomp(text);
		sysroot = realpath(text, NULL);
		if (!sysroot || asprintf(&bin, "%s/bin/rustc", sysroot) < 0) {
			bin = NULL;
			rc = absent(row, err, "reported a sysroot that does not exist",
				    candidate);
			goto out;
		}
		rc = resolve_binary(row, bin, real, err);
		free(text);
		text = NULL;
	}
	if (rc)
		goto out;
	char *argv[] = { *real, (char *)"--version", NULL };
	rc = probe(row, argv, path_env, &text, err);
	if (rc)
		goto out;
	if (al_version_parse(text, version, VERSION_MAX)) {
		rc = absent(row, err, "gave no version", *real);
		goto out;
	}
	/* The standard library lives under the sysroot: SYSROOT/lib. */
	if (sysroot)
		rc = al_strv_push(dirs, sysroot);
out:
	free(first);
	free(text);
	free(sysroot);
	free(bin);
	return rc;
}

/* java: javac resolved through the alternatives links; its JDK's own
 * `java` runs the classes.  `javac -version` prints "javac 17.0.15". */
static int observe_java(const al_lang_row *row, const char *candidate,
			const char *path_env, char **real, char *version,
			char ***dirs, char **helper, char ***etc, al_error **err)
{
	char *text = NULL, *copy = NULL, *java = NULL;
	int rc = resolve_binary(row, candidate, real, err);

	if (rc || *real == NULL)
		return rc ? rc : -ENOENT;
	char *argv[] = { *real, (char *)"-version", NULL };
	rc = probe(row, argv, path_env, &text, err);
	if (rc)
		return rc;
	if (al_version_parse(text, version, VERSION_MAX)) {
		rc = absent(row, err, "gave no version", *real);
		goto out;
	}
	copy = strdup(*real);
	if (!copy || asprintf(&java, "%s/java", dirname(copy)) < 0) {
		java = NULL;
		rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL, "out of memory");
		goto out;
	}
	if (access(java, X_OK) < 0 || !al_file_is_elf(java)) {
		rc = absent(row, err, "has no java launcher beside it", *real);
		goto out;
	}
	*helper = java;
	java = NULL;
	/* JAVA_HOME: the directory above bin/ (libraries, modules); copy
	 * already holds .../bin. */
	char *home = dirname(copy);
	rc = al_strv_push(dirs, home);
	/* Debian keeps the JDK's configuration in /etc/java-N-openjdk behind
	 * links from JAVA_HOME/conf; the sandbox shows only a few files of
	 * /etc, so that directory is a root of its own. */
	char *conf = NULL, *target = NULL;
	if (!rc && asprintf(&conf, "%s/conf/security/java.security", home) >= 0) {
		target = realpath(conf, NULL);
		free(conf);
	}
	if (!rc && target && strncmp(target, "/etc/", 5) == 0) {
		char *d = dirname(dirname(target));

		if (strcmp(d, "/etc") != 0)
			rc = al_strv_push(etc, d);
	}
	free(target);
out:
	free(text);
	free(copy);
	free(java);
	return rc;
}

int al_observe_compiler(const al_lang_row *row, const char *candidate,
			const char *path_env, al_toolchain **out, al_error **err)
{
	char version[VERSION_MAX] = "";
	char *real = NULL, *helper = NULL, **dirs = NULL, **etc = NULL;
	al_toolchain *tc = NULL;
	int rc;

	*out = NULL;
	switch (row->probe) {
	case AL_PROBE_GCC:
		rc = observe_gcc(row, candidate, path_env, &real, version, &dirs, err);
		break;
	case AL_PROBE_GO:
		rc = observe_go(row, candidate, path_env, &real, version, &dirs, err);
		break;
	case AL_PROBE_RUST:
		rc = observe_rust(row, candidate, path_env, &real, version, &dirs, err);
		break;
	case AL_PROBE_JAVA:
		rc = observe_java(row, candidate, path_env, &real, version, &dirs,
				  &helper, &etc, err);
		break;
	default:
		return al_error_set(err, AL_ERR_INTERNAL, EINVAL, NULL,
				    "%s: not a compiler row", row->language);
	}
	if (rc == 0 && real == NULL)
		rc = absent(row, err, "cannot be resolved", candidate);
	if (rc)
		goto out;
	tc = calloc(1, sizeof(*tc));
	if (!tc || !(tc->language = strdup(row->language)) ||
	    !(tc->toolchain = strdup(row->toolchain)) ||
	    !(tc->version = strdup(version)) || !(tc->path = strdup(real)) ||
	    al_roots_build(dirs, &tc->extra_roots)) {
		rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				  "%s: cannot record the toolchain", row->language);
		goto out;
	}
	for (size_t i = 0; etc && etc[i]; i++)
		if (al_strv_push(&tc->extra_roots, etc[i])) {
			rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL, "out of memory");
			goto out;
		}
	tc->helper_path = helper;
	helper = NULL;
	*out = tc;
	tc = NULL;
out:
	al_toolchain_free(tc);
	free(real);
	free(helper);
	al_strv_free_all(dirs);
	al_strv_free_all(etc);
	return rc;
}
