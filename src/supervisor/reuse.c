/* Checks between two runs of one supervisor (see reuse.h). */
#include "supervisor/reuse.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/cgfs.h"
#include "core/hash.h"
#include "core/util.h"

#define BITS_PER (8 * sizeof(unsigned long))

extern char **environ;

static unsigned count_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	unsigned n = 0;
	struct dirent *de;
	while (d != NULL && (de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	if (d != NULL)
		closedir(d);
	return n;
}

int al_reuse_snapshot(al_reuse_state *out)
{
	memset(out, 0, sizeof(*out));
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL)
		return -errno;
	int self = dirfd(d);
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);
		if (*end != '\0' || de->d_name[0] == '\0' || fd == self)
			continue;
		if (fd < 0 || fd >= 1024) {
			out->over = true;
			continue;
		}
		out->bits[fd / BITS_PER] |= 1UL << (fd % BITS_PER);
	}
	closedir(d);
	out->threads = count_threads();
	al_digest dg;
	al_digest_init(&dg);
	for (char **e = environ; e != NULL && *e != NULL; e++)
		al_digest_update(&dg, *e, strlen(*e) + 1);
	al_digest_final(&dg, out->env);
	return out->threads > 0 ? 0 : -EIO;
}

const char *al_reuse_differs(const al_reuse_state *a, const al_reuse_state *b)
{
	if (a->over || b->over || memcmp(a->bits, b->bits, sizeof(a->bits)) != 0)
		return "descriptors";
	if (a->threads != b->threads)
		return "threads";
	if (strcmp(a->env, b->env) != 0)
		return "environment";
	return NULL;
}

static bool allowed(const char *name, const al_reuse_keep *keep)
{
	for (size_t i = 0; keep != NULL && i < keep->n; i++)
		if (strcmp(name, keep->names[i]) == 0)
			return true;
	return false;
}

/* Every cgroup beneath dir is empty but the kept ones right beneath the
 * supervisor's own (its warm members: not descended, not removed); the
 * empty ones are removed (the provider removes its own; this only tidies
 * what it left). */
static bool below_empty(const char *dir, int depth, const al_reuse_keep *keep)
{
	char path[PATH_MAX];
	bool ok = depth < 16;
	DIR *d = ok ? opendir(dir) : NULL;
	if (d == NULL)
		return false;
	struct dirent *de;
	size_t kept = 0;
	while (ok && (de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (depth == 0 && allowed(de->d_name, keep)) {
			kept++;
			continue;
		}
		char ev[64];
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >=
			    (int)sizeof(path) ||
		    al_cgfs_read(path, "cgroup.events", ev, sizeof(ev)) < 0 ||
		    strstr(ev, "populated 0") == NULL) {
			ok = false;
			break;
		}
		ok = below_empty(path, depth + 1, NULL);
		(void)al_cgfs_rmdir_retry(path);
	}
	closedir(d);
	/* Each kept one must be there: a name that is not is no proof. */
	return ok && (depth > 0 || keep == NULL || kept == keep->n);
}

bool al_reuse_tree_alone(const al_reuse_keep *keep)
{
	char *cg = al_cgfs_self_unified();
	const char *slash = cg != NULL ? strrchr(cg, '/') : NULL;
	bool ok = slash != NULL &&
		  strncmp(slash, "/airlock-run-sup-", 17) == 0;
	if (ok) {
		/* Only this process: its threads are not listed apart. */
		char buf[256];
		int rc = al_cgfs_read(cg, "cgroup.procs", buf, sizeof(buf));
		long pid = 0;
		char extra = 0;
		ok = rc >= 0 && sscanf(buf, "%ld %c", &pid, &extra) == 1 &&
		     pid == (long)getpid();
	}
	ok = ok && below_empty(cg, 0, keep);
	free(cg);
	return ok;
}

void al_reuse_drain_signals(void)
{
	sigset_t all;
	sigfillset(&all);
	const struct timespec zero = {0, 0};
	/* Only the blocked ones can be pending here; bounded all the same. */
	for (int i = 0; i < 64 && sigtimedwait(&all, NULL, &zero) > 0; i++)
		;
}

void al_reuse_set_nonce(char *argv_nonce, const char *nonce)
{
	size_t n = strlen(argv_nonce);
	if (strlen(nonce) == n)
		memcpy(argv_nonce, nonce, n);
}
