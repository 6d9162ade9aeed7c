/* Provider modules: a provider table loaded from a shared object named in
 * the configuration (docs/writing-a-provider.md, "As a module").
 *
 * What is loaded is exactly the file that was checked: it is opened once,
 * checked through that descriptor, and dlopen()ed as /proc/self/fd/N, so a
 * rename between the check and the load cannot swap it.  The directories
 * above it are checked too, because whoever can write one of them can
 * replace the file after it was checked for the next process.  Modules are
 * never unloaded: a handle of theirs may live as long as the process.
 * Their descriptors stay open too: the dynamic loader knows an object by
 * the name it was opened with, and a later module opened through a reused
 * descriptor number would be taken for the earlier one. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <airlock/provider.h>

typedef struct loaded {
	dev_t dev;
	ino_t ino;
	int fd;
	void *handle;
	const al_provider_ops *ops;
	struct loaded *next;
} loaded;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static loaded *modules;

#define fail(err, code, errnum, ...)                                        \
	al_error_set(err, code, errnum, "module", __VA_ARGS__)

/* Owned by root or by us, and writable by nobody else (a root-owned
 * directory with the sticky bit may be writable by others: they cannot
 * replace what is ours in it). */
static bool trusted(const struct stat *st, bool dir)
{
	if (st->st_uid != 0 && st->st_uid != geteuid())
		return false;
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) == 0)
		return true;
	return dir && st->st_uid == 0 && (st->st_mode & S_ISVTX);
}

/* Every directory from / down to the file's own, by its real path. */
static int check_dirs(const char *real, al_error **err)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", real);
	char *slash = strrchr(buf, '/');
	if (slash == NULL)
		return fail(err, AL_ERR_INVALID_CONFIG, EINVAL,
			    "the module path %s%s is not absolute", real, "");
	for (;;) {
		*slash = '\0';
		const char *dir = buf[0] != '\0' ? buf : "/";
		struct stat st;
		if (lstat(dir, &st) < 0)
			return fail(err, AL_ERR_UNAVAILABLE, errno,
				    "cannot read the directory %s of the "
				    "module: %s",
				    dir, strerror(errno));
		if (!S_ISDIR(st.st_mode) || !trusted(&st, true))
			return fail(err, AL_ERR_UNAVAILABLE, EPERM,
				    "the module's directory %s is writable by "
				    "another user%s; a module must be in "
				    "directories only root (or this user) can "
				    "write",
				    dir, "");
		if (buf[0] == '\0')
			return 0;
		slash = strrchr(buf, '/');
	}
}

/* dlerror()'s text names paths and symbols; only printable ASCII of it is
 * kept, bounded, so a hostile file name cannot write escapes to a log. */
static void sanitize(const char *in, char *out, size_t len)
{
	size_t j = 0;
	for (size_t i = 0; in != NULL && in[i] != '\0' && j + 1 < len; i++) {
		unsigned char ch = (unsigned char)in[i];
		out[j++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	out[j] = '\0';
}

/* The table itself: this ABI, this size, every operation the host calls
 * unconditionally, and the configured name. */
static int check_table(const al_provider_ops *ops, const char *id,
		       const char *path, al_error **err)
{
	char num[64];
	if (ops == NULL)
		return fail(err, AL_ERR_UNAVAILABLE, EPROTO,
			    "the module %s returned no provider table%s", path,
			    "");
	if (ops->abi_version != AL_PROVIDER_ABI_VERSION) {
		snprintf(num, sizeof(num), "%u, this airlock speaks %u",
			 (unsigned)ops->abi_version, AL_PROVIDER_ABI_VERSION);
		return fail(err, AL_ERR_UNAVAILABLE, EPROTO,
			    "the module %s was built for provider ABI "
			    "version %s; rebuild it against these headers",
			    path, num);
	}
	if (ops->struct_size != sizeof(al_provider_ops)) {
		snprintf(num, sizeof(num), "%u bytes, this airlock's has %zu",
			 (unsigned)ops->struct_size, sizeof(al_provider_ops));
		return fail(err, AL_ERR_UNAVAILABLE, EPROTO,
			    "the module %s has a provider table of %s; "
			    "rebuild it against these headers",
			    path, num);
	}
	if (ops->id == NULL || ops->probe == NULL || ops->ensure == NULL ||
	    ops->execute == NULL || ops->release == NULL)
		return fail(err, AL_ERR_UNAVAILABLE, EPROTO,
			    "the module %s lacks an id or one of probe, "
			    "ensure, execute, release%s",
			    path, "");
	if (strcmp(ops->id, id) != 0)
		return fail(err, AL_ERR_INVALID_CONFIG, EINVAL,
			    "the module %s provides another provider than "
			    "the configured %s",
			    path, id);
	return 0;
}

/* Called with the lock held. */
static int load_fd(loaded *m, const char *id, const char *path,
		   al_error **err)
{
	char self[64], msg[256];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", m->fd);
	void *h = dlopen(self, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		sanitize(dlerror(), msg, sizeof(msg));
		return fail(err, AL_ERR_UNAVAILABLE, ENOEXEC,
			    "cannot load the module %s: %s", path, msg);
	}
	/* Another file under a name the loader already knows (a module that
	 * failed its checks and could not be unloaded): not this one. */
	for (const loaded *o = modules; o != NULL; o = o->next)
		if (o->handle == h) {
			dlclose(h);
			return fail(err, AL_ERR_UNAVAILABLE, EEXIST,
				    "cannot load the module %s: the loader "
				    "returned another module%s",
				    path, "");
		}
	al_provider_module_entry_fn entry;
	/* POSIX's sanctioned way from a data pointer to a function. */
	*(void **)&entry = dlsym(h, AL_PROVIDER_MODULE_ENTRY);
	if (entry == NULL) {
		dlclose(h);
		return fail(err, AL_ERR_UNAVAILABLE, ENOENT,
			    "the module %s does not define %s()", path,
			    AL_PROVIDER_MODULE_ENTRY);
	}
	const al_provider_ops *ops = entry();
	int rc = check_table(ops, id, path, err);
	if (rc < 0) {
		dlclose(h);
		return rc;
	}
	m->handle = h;
	m->ops = ops;
	return 0;
}

int al_provider_module_load(const char *id, const char *path,
			    const al_provider_ops **out, al_error **err)
{
	*out = NULL;
	if (id == NULL || path == NULL || path[0] != '/' ||
	    strlen(path) >= PATH_MAX)
		return fail(err, AL_ERR_INVALID_CONFIG, EINVAL,
			    "a module path must be absolute%s%s", "", "");
	if (al_provider_lookup(id) != NULL)
		return fail(err, AL_ERR_INVALID_CONFIG, EEXIST,
			    "the module provider %s has the name of a "
			    "built-in provider%s",
			    id, "");
	char real[PATH_MAX];
	if (realpath(path, real) == NULL)
		return fail(err, AL_ERR_UNAVAILABLE, errno,
			    "cannot find the module %s: %s", path,
			    strerror(errno));
	int rc = check_dirs(real, err);
	if (rc < 0)
		return rc;
	int fd = open(real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		return fail(err, AL_ERR_UNAVAILABLE, -rc,
			    "cannot open the module %s: %s", path,
			    strerror(-rc));
	}
	if (!S_ISREG(st.st_mode) || !trusted(&st, false)) {
		close(fd);
		return fail(err, AL_ERR_UNAVAILABLE, EPERM,
			    "the module %s is not a regular file owned by "
			    "root (or this user) and writable by no one "
			    "else%s",
			    path, "");
	}
	pthread_mutex_lock(&lock);
	for (loaded *m = modules; m != NULL; m = m->next)
		if (m->dev == st.st_dev && m->ino == st.st_ino) {
			rc = strcmp(m->ops->id, id) == 0
				     ? 0
				     : fail(err, AL_ERR_INVALID_CONFIG, EINVAL,
					    "the module %s provides another "
					    "provider than the configured %s",
					    path, id);
			if (rc == 0)
				*out = m->ops;
			goto out;
		}
	loaded *m = calloc(1, sizeof(*m));
	if (m == NULL) {
		rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				  "out of memory");
		goto out;
	}
	m->fd = fd;
	if ((rc = load_fd(m, id, path, err)) < 0) {
		free(m);
		goto out;
	}
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	m->next = modules;
	modules = m;
	*out = m->ops;
	fd = -1; /* kept: see the top of this file */
out:
	pthread_mutex_unlock(&lock);
	if (fd >= 0)
		close(fd);
	return rc;
}
