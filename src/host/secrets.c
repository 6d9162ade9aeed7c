/* Secrets are read only when a run launches, straight into the run's
 * environment strings, and wiped when the run ends: they never enter a log,
 * the audit trail (names only), a result or an error.  A store readable by
 * anyone but us is refused: a secret that leaked to other local users is no
 * longer one. */
#include "host/secrets.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#define SECRET_MAX_BYTES (64u * 1024u)

static int private_ok(const struct stat *st)
{
	return st->st_uid == geteuid() && (st->st_mode & 077) == 0;
}

int al_secrets_check(al_secrets_kind kind, const char *path, al_error **err)
{
	struct stat st;
	const char *key = kind == AL_SECRETS_DIR ? "secrets.dir"
						 : "secrets.file";
	if (kind == AL_SECRETS_NONE)
		return 0;
	if (lstat(path, &st) < 0)
		return al_error_set(err, AL_ERR_INVALID_CONFIG, errno, key,
				    "the secret store is missing");
	if (kind == AL_SECRETS_DIR ? !S_ISDIR(st.st_mode)
				   : !S_ISREG(st.st_mode))
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, key,
				    "the secret store has the wrong file type");
	if (!private_ok(&st))
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EPERM, key,
				    "the secret store must be owned by this "
				    "user with mode 0600/0700 or stricter");
	return 0;
}

/* Reads a whole private regular file (at most SECRET_MAX_BYTES). */
static int read_private(int dirfd, const char *name, char **out, size_t *len)
{
	struct stat st;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char *buf = NULL;
	int rc = 0;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || !private_ok(&st) ||
	    st.st_size > (off_t)SECRET_MAX_BYTES) {
		rc = -EPERM;
		goto out;
	}
	buf = calloc(1, (size_t)st.st_size + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r < 0 ? -errno : -EIO;
			goto out;
		}
		got += (size_t)r;
	}
	*out = buf;
	*len = got;
	buf = NULL;
out:
	if (buf) {
		explicit_bzero(buf, (size_t)st.st_size);
		free(buf);
	}
	close(fd);
	return rc;
}

static char *make_env(const char *name, const char *value, size_t vlen)
{
	if (!name || !value || memchr(value, '\0', vlen))
		return NULL; /* not deliverable through the environment */
	size_t nl = strlen(name);
	char *e = malloc(nl + 1 + vlen + 1);
	if (!e)
		return NULL;
	memcpy(e, name, nl);
	e[nl] = '=';
	memcpy(e + nl + 1, value, vlen);
	e[nl + 1 + vlen] = '\0';
	return e;
}

/* The JSON store, read once per launch and wiped afterwards. */
static int resolve_file(const char *path, char *const *names,
			char *const *vars, size_t n, char **env)
{
	char *text = NULL;
	size_t len = 0;
	json_t *root = NULL;
	int rc = read_private(AT_FDCWD, path, &text, &len);
	if (rc < 0 || !text)
		return rc < 0 ? rc : -EIO;
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	explicit_bzero(text, len);
	free(text);
	if (!json_is_object(root)) {
		rc = -EINVAL;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_object_get(root, names[i]);
		if (!json_is_string(v)) {
			rc = -ENOENT;
			goto out;
		}
		env[i] = make_env(vars[i], json_string_value(v),
				  json_string_length(v));
		if (!env[i]) {
			rc = -EINVAL;
			goto out;
		}
	}
out:
	/* jansson keeps its own copies; wipe them before they are freed. */
	if (json_is_object(root)) {
		const char *k;
		json_t *v;
		json_object_foreach(root, k, v) {
			if (json_is_string(v))
				explicit_bzero((char *)json_string_value(v),
					       json_string_length(v));
		}
	}
	json_decref(root);
	return rc;
}

static int resolve_dir(const char *path, char *const *names,
		       char *const *vars, size_t n, char **env)
{
	struct stat st;
	int rc = 0;
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fstat(dfd, &st) < 0 || !private_ok(&st)) {
		rc = -EPERM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char *val = NULL;
		size_t len = 0;
		if ((rc = read_private(dfd, names[i], &val, &len)) < 0)
			goto out;
		if (!val) {
			rc = -EIO;
			goto out;
		}
		/* One trailing newline is the file's, not the secret's. */
		size_t vlen = len;
		if (vlen > 0 && val[vlen - 1] == '\n')
			vlen--;
		env[i] = make_env(vars[i], val, vlen);
		explicit_bzero(val, len);
		free(val);
		if (!env[i]) {
			rc = -EINVAL;
			goto out;
		}
	}
out:
	close(dfd);
	return rc;
}

int al_secrets_resolve(al_secrets_kind kind, const char *path,
		       char *const *names, char *const *vars, size_t n_names,
		       char ***env, al_error **err)
{
	if (vars == NULL)
		vars = names;
	*env = NULL;
	if (n_names == 0)
		return 0;
	char **out = calloc(n_names, sizeof(*out));
	if (!out)
		return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				    "out of memory");
	int rc = -ENOENT;
	if (kind == AL_SECRETS_DIR)
		rc = resolve_dir(path, names, vars, n_names, out);
	else if (kind == AL_SECRETS_FILE)
		rc = resolve_file(path, names, vars, n_names, out);
	if (rc < 0) {
		al_secrets_env_free(out, n_names);
		/* Which secret failed is not said either: names are for
		 * the audit trail, not for error text a caller sees. */
		return al_error_set(err, AL_ERR_UNAVAILABLE, -rc,
				    "secret_unavailable",
				    "a granted secret could not be read from "
				    "the secret store");
	}
	*env = out;
	return 0;
}

void al_secrets_env_free(char **env, size_t n)
{
	if (!env)
		return;
	for (size_t i = 0; i < n; i++) {
		if (env[i]) {
			explicit_bzero(env[i], strlen(env[i]));
			free(env[i]);
		}
	}
	free(env);
}
