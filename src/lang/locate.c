/* Finding programs and describing files; see locate.h. */
#include "lang/locate.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lang/path_memo.h"
#include "lang/table.h"

int al_file_id(const char *path, char id[AL_FILE_ID_MAX])
{
	struct stat st;

	if (stat(path, &st) < 0)
		return -errno;
	snprintf(id, AL_FILE_ID_MAX, "%ju:%ju:%jd:%jd.%09ld", (uintmax_t)st.st_dev,
		 (uintmax_t)st.st_ino, (intmax_t)st.st_size,
		 (intmax_t)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
	return 0;
}

static bool is_exec_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

static int path_search(const char *path_env, const char *name, char **out)
{
	const char *p = path_env;

	*out = NULL;
	while (p && *p) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);

		/* An empty or relative entry would mean the caller's cwd: not
		 * a place to take an interpreter from. */
		if (len > 0 && p[0] == '/') {
			char *cand = NULL;

			if (asprintf(&cand, "%.*s/%s", (int)len, p, name) < 0)
				return -ENOMEM;
			if (is_exec_file(cand)) {
				*out = cand;
				return 0;
			}
			free(cand);
		}
		if (!colon)
			break;
		p = colon + 1;
	}
	return -ENOENT;
}

int al_path_find(const char *path_env, const char *name, char **out)
{
	return al_path_memo_find(path_env, name, path_search, out);
}

static bool file_starts_with(const char *path, const char *magic, size_t n)
{
	char buf[8];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = n <= sizeof(buf) && read(fd, buf, n) == (ssize_t)n &&
	     memcmp(buf, magic, n) == 0;
	close(fd);
	return ok;
}

bool al_file_is_script(const char *path)
{
	return file_starts_with(path, "#!", 2);
}

bool al_file_is_elf(const char *path)
{
	return file_starts_with(path, "\177ELF", 4);
}

/* esbuild's npm platform package for this build of airlock. */
static const char *esbuild_platform(void)
{
#if defined(__x86_64__)
	return "linux-x64";
#elif defined(__aarch64__)
	return "linux-arm64";
#elif defined(__i386__)
	return "linux-ia32";
#elif defined(__arm__)
	return "linux-arm";
#elif defined(__riscv) && __riscv_xlen == 64
	return "linux-riscv64";
#else
	return NULL;
#endif
}

/* From an esbuild entry (native binary, the package's bin/esbuild or a
 * node_modules/.bin link) to the native binary, canonical. */
static int esbuild_resolve(const char *entry, char **out)
{
	const char *plat = esbuild_platform();
	char *real = realpath(entry, NULL);
	char *dir = NULL;
	int rc = -ENOENT;

	*out = NULL;
	if (!real)
		return -ENOENT;
	dir = strdup(real);
	if (!dir) {
		rc = -ENOMEM;
		goto out;
	}
	/* Walk up to the enclosing node_modules and prefer the platform
	 * package's binary: bin/esbuild may be the JS launcher. */
	for (char *slash = strrchr(dir, '/'); plat && slash && slash != dir;
	     slash = strrchr(dir, '/')) {
		*slash = '\0';
		const char *base = strrchr(dir, '/');

		if (base && strcmp(base + 1, "node_modules") == 0) {
			char *cand = NULL;

			if (asprintf(&cand, "%s/@esbuild/%s/bin/esbuild", dir, plat) < 0) {
				rc = -ENOMEM;
				goto out;
			}
			if (is_exec_file(cand) && al_file_is_elf(cand)) {
				*out = realpath(cand, NULL);
				rc = *out ? 0 : -errno;
			}
			free(cand);
			if (*out)
				goto out;
			break;
		}
	}
	if (al_file_is_elf(real) && access(real, X_OK) == 0) {
		*out = real;
		real = NULL;
		rc = 0;
	}
out:
	free(dir);
	free(real);
	return rc;
}

static int tools_dir(char **out)
{
	const char *env = getenv("AIRLOCK_TOOLS_DIR");
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	*out = NULL;
	if (env && env[0] == '/') {
		*out = strdup(env);
		return *out ? 0 : -ENOMEM;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -ENOENT;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return -ENOENT;
	*slash = '\0';
	if (asprintf(out, "%s/../tools", exe) < 0) {
		*out = NULL;
		return -ENOMEM;
	}
	return 0;
}

int al_esbuild_find(const char *path_env, char **out)
{
	char *entry = NULL, *dir = NULL;
	int rc;

	*out = NULL;
	if (al_path_find(path_env, "esbuild", &entry) == 0) {
		rc = esbuild_resolve(entry, out);
		free(entry);
		if (rc != -ENOENT)
			return rc;
		entry = NULL;
	}
	rc = tools_dir(&dir);
	if (rc)
		return rc;
	if (asprintf(&entry, "%s/node_modules/.bin/esbuild", dir) < 0) {
		free(dir);
		return -ENOMEM;
	}
	free(dir);
	rc = esbuild_resolve(entry, out);
	free(entry);
	return rc;
}

static bool is_below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

bool al_path_is_system(const char *path)
{
	static const char *const system_dirs[] = {
		"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
	};

	if (strcmp(path, "/") == 0)
		return true;
	for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++) {
		if (is_below(path, system_dirs[i]))
			return true;
	}
	return false;
}

static int by_length(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	size_t lx = strlen(x), ly = strlen(y);

	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x, y);
}

int al_roots_build(char *const *dirs, char ***out)
{
	char **canon = NULL, **roots = NULL;
	size_t n = 0;
	int rc = 0;

	*out = NULL;
	canon = calloc(al_strv_len(dirs) + 1, sizeof(*canon));
	if (!canon)
		return -ENOMEM;
	for (size_t i = 0; dirs && dirs[i]; i++) {
		char *c = realpath(dirs[i], NULL);
		struct stat st;

		if (!c)
			continue;
		if (stat(c, &st) < 0 || !S_ISDIR(st.st_mode) || al_path_is_system(c)) {
			free(c);
			continue;
		}
		canon[n++] = c;
	}
	/* Shortest first, so a dir below a kept root is seen after it. */
	qsort(canon, n, sizeof(*canon), by_length);
	roots = calloc(1, sizeof(*roots));
	if (!roots) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		bool covered = false;

		for (size_t j = 0; roots[j]; j++)
			covered = covered || is_below(canon[i], roots[j]);
		if (covered)
			continue;
		rc = al_strv_push(&roots, canon[i]);
		if (rc)
			goto out;
	}
	*out = roots;
	roots = NULL;
out:
	for (size_t i = 0; i < n; i++)
		free(canon[i]);
	free(canon);
	al_strv_free_all(roots);
	return rc;
}
