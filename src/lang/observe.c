/* Fresh toolchain observation; see observe.h. */
#include "lang/observe.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lang/locate.h"
#include "lang/probe_run.h"

/* A probe prints a few lines plus its own memory map, far below this. */
#define PROBE_MAX_OUT (1024 * 1024)
#define VERSION_MAX 32
#define DPKG_STATUS "/var/lib/dpkg/status"

/* Probe code: our own fixed one-liners, never request code.  Each prints
 * its version text, its own executable, its prefixes and its memory map,
 * so that one process answers everything. */
static const char python_probe[] =
	"import sys\n"
	"w=sys.stdout.write\n"
	"w('V %s\\nE %s\\n'%(sys.version.splitlines()[0],sys.executable))\n"
	"for p in (sys.prefix,sys.exec_prefix,getattr(sys,'base_prefix',''),"
	"getattr(sys,'base_exec_prefix','')):\n"
	" if p:w('P %s\\n'%p)\n"
	"w(open('/proc/self/maps').read())\n";
static const char node_probe[] =
	"process.stdout.write('V '+process.version+'\\nE '+process.execPath+'\\n'"
	"+require('fs').readFileSync('/proc/self/maps','utf8'))";
static const char ruby_probe[] =
	"require 'rbconfig';c=RbConfig::CONFIG;"
	"$stdout.write(\"V #{RUBY_VERSION}\\nE #{RbConfig.ruby}\\n"
	"P #{c['prefix']}\\nP #{c['rubylibprefix']}\\nP #{c['libdir']}\\n\""
	"+File.read('/proc/self/maps'))";
static const char pwsh_probe[] =
	"'V ' + $PSVersionTable.PSVersion.ToString(); "
	"'E ' + [Environment]::ProcessPath; 'P ' + $PSHOME; "
	"Get-Content -Raw /proc/self/maps";

static int push_unique(char ***v, const char *s)
{
	for (size_t i = 0; *v && (*v)[i]; i++) {
		if (strcmp((*v)[i], s) == 0)
			return 0;
	}
	return al_strv_push(v, s);
}

/* The directory of the file a maps line names, or NULL. */
static char *maps_dir(const char *line, size_t len)
{
	size_t i = 0;
	char *path, *slash;
	struct stat st;

	/* address perms offset dev inode pathname */
	for (int field = 0; field < 5; field++) {
		while (i < len && line[i] != ' ')
			i++;
		while (i < len && line[i] == ' ')
			i++;
	}
	if (i >= len || line[i] != '/')
		return NULL;
	path = strndup(line + i, len - i);
	if (!path)
		return NULL;
	if (strstr(path, " (deleted)") || stat(path, &st) < 0 ||
	    !S_ISREG(st.st_mode)) {
		free(path);
		return NULL;
	}
	slash = strrchr(path, '/');
	if (slash == path)
		slash[1] = '\0';
	else
		*slash = '\0';
	return path;
}

int al_observe_parse(const char *text, char **version_text, char **exe,
		     char ***dirs)
{
	int rc;

	*version_text = NULL;
	*exe = NULL;
	*dirs = NULL;
	if (!text)
		return -EINVAL;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len && p[len - 1] == '\r')
			len--;
		if (len >= 2 && p[1] == ' ' && (p[0] == 'V' || p[0] == 'E' || p[0] == 'P')) {
			char *val = strndup(p + 2, len - 2);

			if (!val) {
				rc = -ENOMEM;
				goto fail;
			}
			if (p[0] == 'V' && !*version_text) {
				*version_text = val;
			} else if (p[0] == 'E' && !*exe) {
				*exe = val;
			} else if (p[0] == 'P' && val[0] == '/') {
				rc = push_unique(dirs, val);
				free(val);
				if (rc)
					goto fail;
			} else {
				free(val);
			}
		} else {
			char *dir = maps_dir(p, len);

			if (dir) {
				rc = push_unique(dirs, dir);
				free(dir);
				if (rc)
					goto fail;
			}
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	if (!*version_text || !*exe || !(*exe)[0]) {
		rc = -EINVAL;
		goto fail;
	}
	return 0;
fail:
	free(*version_text);
	free(*exe);
	al_strv_free_all(*dirs);
	*version_text = NULL;
	*exe = NULL;
	*dirs = NULL;
	return rc;
}

int al_dpkg_version(const char *status_file, const char *package, char *out,
		    size_t outsz)
{
	FILE *f = fopen(status_file, "re");
	char *line = NULL, *version = NULL;
	size_t cap = 0;
	bool in_pkg = false, installed = false;
	int rc = -ENOENT;

	if (!f)
		return -ENOENT;
	for (;;) {
		ssize_t n = getline(&line, &cap, f);
		bool end = n <= 1; /* EOF (-1) or a blank line */

		if (!end && line[n - 1] == '\n')
			line[n - 1] = '\0';
		if (end) {
			/* End of a stanza. */
			if (in_pkg && installed && version) {
				rc = al_version_parse(version, out, outsz);
				break;
			}
			in_pkg = installed = false;
			free(version);
			version = NULL;
			if (n < 0)
				break;
			continue;
		}
		if (strncmp(line, "Package: ", 9) == 0) {
			in_pkg = strcmp(line + 9, package) == 0;
		} else if (strncmp(line, "Status: ", 8) == 0) {
			size_t l = strlen(line);

			installed = l >= 10 && strcmp(line + l - 10, " installed") == 0;
		} else if (strncmp(line, "Version: ", 9) == 0 && !version) {
			/* Drop an epoch ("1:2.3-4"): not part of the version. */
			const char *v = strchr(line + 9, ':');

			version = strdup(v ? v + 1 : line + 9);
			if (!version) {
				rc = -ENOMEM;
				break;
			}
		}
	}
	free(version);
	free(line);
	fclose(f);
	return rc;
}

static int probe_env(const char *path_env, char *envp[4], char **path_var,
		     char **home_var)
{
	const char *home = getenv("HOME");

	*path_var = NULL;
	*home_var = NULL;
	if (asprintf(path_var, "PATH=%s", path_env) < 0 ||
	    asprintf(home_var, "HOME=%s", home && home[0] == '/' ? home : "/") < 0) {
		free(*path_var);
		*path_var = NULL;
		*home_var = NULL;
		return -ENOMEM;
	}
	envp[0] = *path_var;
	envp[1] = *home_var;
	envp[2] = (char *)"LC_ALL=C";
	envp[3] = NULL;
	return 0;
}

/* Runs argv as a probe; an unusable interpreter is -ENOENT with err. */
static int run_probe(const al_lang_row *row, char *const argv[],
		     const char *path_env, char **text, al_error **err)
{
	char *envp[4], *path_var, *home_var;
	int status = 0;
	int rc = probe_env(path_env, envp, &path_var, &home_var);

	if (rc)
		return al_error_set(err, AL_ERR_INTERNAL, -rc, NULL, "out of memory");
	rc = al_probe_run(argv, envp, row->timeout_ms, PROBE_MAX_OUT, text, &status);
	free(path_var);
	free(home_var);
	if (rc == -ETIMEDOUT)
		return al_error_set(err, AL_ERR_UNAVAILABLE, ETIMEDOUT, "toolchain_probe",
				    "%s: %s did not answer within %d ms", row->language,
				    argv[0], row->timeout_ms);
	if (rc == -ENOMEM)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL, "out of memory");
	if (rc)
		return al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "toolchain_absent",
				    "%s: cannot run %s: %s", row->language, argv[0],
				    strerror(-rc));
	if (status != 0) {
		free(*text);
		*text = NULL;
		return al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "toolchain_absent",
				    "%s: %s exited with status %d when asked for its version",
				    row->language, argv[0], status);
	}
	return 0;
}

static int new_toolchain(const al_lang_row *row, const char *version,
			 const char *path, char *const *dirs, al_toolchain **out)
{
	al_toolchain *tc = calloc(1, sizeof(*tc));
	int rc = -ENOMEM;

	*out = NULL;
	if (!tc)
		return -ENOMEM;
	tc->language = strdup(row->language);
	tc->toolchain = strdup(row->toolchain);
	tc->version = strdup(version);
	tc->path = strdup(path);
	if (!tc->language || !tc->toolchain || !tc->version || !tc->path)
		goto fail;
	rc = al_roots_build(dirs, &tc->extra_roots);
	if (rc)
		goto fail;
	*out = tc;
	return 0;
fail:
	al_toolchain_free(tc);
	return rc;
}

/* Adds path's directory, and for ".../bin/x" the prefix above it. */
static int push_exe_dirs(char ***dirs, const char *path)
{
	char *copy = strdup(path);
	char *dir, *base;
	int rc;

	if (!copy)
		return -ENOMEM;
	dir = dirname(copy);
	rc = push_unique(dirs, dir);
	base = strrchr(dir, '/');
	if (!rc && base && base != dir && strcmp(base, "/bin") == 0) {
		*base = '\0';
		rc = push_unique(dirs, dir);
	}
	free(copy);
	return rc;
}

/* The toolchain found at real (its directory, and the prefix above a
 * bin/ directory, join dirs). */
static int record_toolchain(const al_lang_row *row, const char *version,
			    const char *real, char ***dirs, al_toolchain **out,
			    al_error **err)
{
	int rc = push_exe_dirs(dirs, real);
	if (!rc)
		rc = new_toolchain(row, version, real, *dirs, out);
	if (rc)
		rc = al_error_set(err, AL_ERR_INTERNAL, -rc, NULL,
				  "%s: cannot record the toolchain",
				  row->language);
	return rc;
}

static int probe_argv(const al_lang_row *row, const char *candidate,
		      const char *argv[8])
{
	size_t i = 0;

	argv[i++] = candidate;
	switch (row->probe) {
	case AL_PROBE_PYTHON:
		/* The same flags as the run, so prefixes and maps match it. */
		argv[i++] = "-E";
		argv[i++] = "-s";
		argv[i++] = "-c";
		argv[i++] = python_probe;
		break;
	case AL_PROBE_NODE:
		argv[i++] = "-e";
		argv[i++] = node_probe;
		break;
	case AL_PROBE_RUBY:
		argv[i++] = "--disable-gems";
		argv[i++] = "-e";
		argv[i++] = ruby_probe;
		break;
	case AL_PROBE_PWSH:
		argv[i++] = "-NoLogo";
		argv[i++] = "-NoProfile";
		argv[i++] = "-NonInteractive";
		argv[i++] = "-Command";
		argv[i++] = pwsh_probe;
		break;
	default:
		return -EINVAL;
	}
	argv[i] = NULL;
	return 0;
}

/* python, node, ruby, pwsh: ask the interpreter (through any shim) for its
 * version, its own executable and its prefixes in one process. */
static int observe_asking(const al_lang_row *row, const char *candidate,
			  const char *path_env, al_toolchain **out, al_error **err)
{
	const char *argv[8];
	char *text = NULL, *vtext = NULL, *exe = NULL, *real = NULL;
	char **dirs = NULL;
	char version[VERSION_MAX];
	int rc;

	if (probe_argv(row, candidate, argv))
		return al_error_set(err, AL_ERR_INTERNAL, EINVAL, NULL,
				    "%s: no probe for this row", row->language);
	rc = run_probe(row, (char *const *)argv, path_env, &text, err);
	if (rc)
		return rc;
	rc = al_observe_parse(text, &vtext, &exe, &dirs);
	if (rc == -ENOMEM) {
		rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL, "out of memory");
		goto out;
	}
	if (rc || al_version_parse(vtext, version, sizeof(version))) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "toolchain_absent",
				  "%s: %s gave no version and executable", row->language,
				  candidate);
		goto out;
	}
	real = realpath(exe, NULL);
	if (!real || al_file_is_script(real)) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "toolchain_absent",
				  "%s: %s reported an executable that is not a binary",
				  row->language, candidate);
		goto out;
	}
	rc = record_toolchain(row, version, real, &dirs, out, err);
out:
	free(text);
	free(vtext);
	free(exe);
	free(real);
	al_strv_free_all(dirs);
	return rc;
}

/* bash (and sh when it is bash): `--version`.  A script cannot be seen
 * through (no way to ask a shell for its own executable without another
 * process), so a shim is refused rather than guessed at. */
static int observe_shell(const al_lang_row *row, const char *candidate,
			 const char *path_env, al_toolchain **out, al_error **err)
{
	char *real = realpath(candidate, NULL);
	char *text = NULL, **dirs = NULL;
	char version[VERSION_MAX];
	const char *base;
	int rc;

	if (!real)
		return al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "toolchain_absent",
				    "%s: cannot resolve %s", row->language, candidate);
	if (al_file_is_script(real)) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "toolchain_absent",
				  "%s: %s is a script (a shim?), not a shell binary",
				  row->language, candidate);
		goto out;
	}
	base = strrchr(real, '/') + 1;
	if (strcmp(base, "bash") == 0 || (row->probe == AL_PROBE_BASH)) {
		char *argv[] = { real, (char *)"--version", NULL };

		rc = run_probe(row, argv, path_env, &text, err);
		if (rc)
			goto out;
		rc = al_version_parse(text, version, sizeof(version));
	} else if (strncmp(base, "dash", 4) == 0) {
		/* dash has no version option; its package records it. */
		rc = al_dpkg_version(DPKG_STATUS, "dash", version, sizeof(version));
	} else {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "toolchain_absent",
				  "%s: %s is %s, a shell whose version cannot be determined",
				  row->language, candidate, base);
		goto out;
	}
	if (rc) {
		rc = al_error_set(err, AL_ERR_UNAVAILABLE, ENOENT, "toolchain_absent",
				  "%s: cannot determine the version of %s", row->language, real);
		goto out;
	}
	rc = record_toolchain(row, version, real, &dirs, out, err);
out:
	free(real);
	free(text);
	al_strv_free_all(dirs);
	return rc;
}

int al_observe_interpreter(const al_lang_row *row, const char *candidate,
			   const char *path_env, al_toolchain **out,
			   al_error **err)
{
	*out = NULL;
	switch (row->probe) {
	case AL_PROBE_SH:
	case AL_PROBE_BASH:
		return observe_shell(row, candidate, path_env, out, err);
	case AL_PROBE_PYTHON:
	case AL_PROBE_NODE:
	case AL_PROBE_RUBY:
	case AL_PROBE_PWSH:
		return observe_asking(row, candidate, path_env, out, err);
	case AL_PROBE_TYPESCRIPT:
	case AL_PROBE_GCC:
	case AL_PROBE_GO:
	case AL_PROBE_RUST:
	case AL_PROBE_JAVA:
		break;
	}
	return al_error_set(err, AL_ERR_INTERNAL, EINVAL, NULL,
			    "%s: not an interpreter row", row->language);
}
