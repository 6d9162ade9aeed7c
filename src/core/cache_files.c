/* Cache directories with one small file per key; see cache_files.h. */
#include "core/cache_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static bool is_member(const char *name, const char *prefix, size_t plen)
{
	size_t l = strlen(name);
	return strncmp(name, prefix, plen) == 0 && l >= plen + 5 &&
	       strcmp(name + l - 5, ".json") == 0;
}

static bool older(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

void al_cache_files_prune(const char *dir, const char *prefix, int keep)
{
	size_t plen = strlen(prefix);
	for (;;) {
		DIR *d = opendir(dir);
		if (d == NULL)
			return;
		char oldest[NAME_MAX + 1] = "";
		struct timespec oldest_t = {0, 0};
		int count = 0;
		const struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			struct stat st;
			if (!is_member(de->d_name, prefix, plen) ||
			    fstatat(dirfd(d), de->d_name, &st,
				    AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			count++;
			if (oldest[0] == '\0' || older(&st.st_mtim, &oldest_t)) {
				snprintf(oldest, sizeof(oldest), "%s", de->d_name);
				oldest_t = st.st_mtim;
			}
		}
		bool dropped = count > keep && unlinkat(dirfd(d), oldest, 0) == 0;
		closedir(d);
		if (!dropped)
			return;
	}
}

void al_cache_files_remove(const char *dir, const char *prefix)
{
	size_t plen = strlen(prefix);
	DIR *d = opendir(dir);
	if (d == NULL)
		return;
	const struct dirent *de;
	while ((de = readdir(d)) != NULL)
		if (is_member(de->d_name, prefix, plen))
			(void)unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
}
