/* Where a run's build cache lives beneath the state dir; see
 * build_cache_dir.h. */
#include "host/build_cache_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <airlock/json.h>

#include "core/util.h"

/* mkdirat + open without following a link; the dir must be ours and
 * private (it is created 0700). */
static int sub_dir(int parent, const char *name)
{
	struct stat st;
	int fd;

	if (mkdirat(parent, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

char *al_host_build_cache_dir(const char *state_dir, const char *tenant,
			      bool shared)
{
	char name[32], hex[65];
	int sd, bc, t;

	if (!state_dir || state_dir[0] != '/')
		return NULL;
	if (shared) {
		snprintf(name, sizeof(name), "shared");
	} else {
		/* a tenant name is not a file name: its hash is */
		al_sha256_hex(tenant ? tenant : "", tenant ? strlen(tenant) : 0, hex);
		snprintf(name, sizeof(name), "t-%.24s", hex);
	}
	sd = open(state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sd < 0)
		return NULL;
	bc = sub_dir(sd, "build-cache");
	close(sd);
	if (bc < 0)
		return NULL;
	t = sub_dir(bc, name);
	close(bc);
	if (t < 0)
		return NULL;
	close(t);
	return al_strdup_printf("%s/build-cache/%s", state_dir, name);
}
