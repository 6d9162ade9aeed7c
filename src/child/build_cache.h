/* Internal: the build cache (docs/languages.md, "Build cache").
 *
 * A directory (the host's STATE_DIR/build-cache/<tenant or "shared">,
 * ours and private) holding one file per entry, named by the entry's key:
 * the SHA-256 of the toolchain (language, id, version, real path and its
 * file identity), the build argv and environment, and the digest of the
 * bundle (every source byte, path and mode).  An entry is the build
 * directory's regular files and directories packed into one file with a
 * checksum; links or anything else make a build uncacheable.  A hit
 * refreshes the entry's mtime; a put evicts the least recently used
 * entries beyond the cache's byte bound. */
#ifndef AL_PROC_BUILD_CACHE_H
#define AL_PROC_BUILD_CACHE_H

#include <stdint.h>
#include <sys/types.h>

#include "lang/languages.h"

/* The default bound of one cache directory. */
#define AL_BUILD_CACHE_DEFAULT_BYTES (256ull * 1024 * 1024)

int al_build_cache_key(const al_toolchain *tc, char *const *argv,
		       char *const *env, const char *sources_digest,
		       char out[65]);

/* Opens the cache dir (not through a link; ours, no group/other bits):
 * the fd or -errno. */
int al_build_cache_open(const char *dir);

/* Unpacks the entry `key` into dest_fd (an empty directory), files owned
 * by uid/gid unless uid is (uid_t)-1.  1 on a hit, 0 on a miss (no entry,
 * or one that is not whole), -errno on failure (dest may then hold part
 * of the entry). */
int al_build_cache_get(int cache_fd, const char *key, int dest_fd, uid_t uid,
		       gid_t gid, uint64_t max_bytes);

/* Packs src_fd's tree into the entry `key`, then evicts down to
 * max_bytes.  -EFBIG when the entry alone is larger. */
int al_build_cache_put(int cache_fd, const char *key, int src_fd,
		       uint64_t max_bytes);

#endif
