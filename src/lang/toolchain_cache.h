/* Internal: the toolchain observation cache, in-process and on disk.
 *
 * An entry is valid while its key still matches: the PATH value, the
 * candidate found on PATH and that file's identity, the helper found (if
 * any) and its identity, and — re-stat'ed on every lookup — the identity
 * of the resolved interpreter recorded at observation time.  A changed or
 * replaced binary is therefore re-observed.
 */
#ifndef AL_LANG_TOOLCHAIN_CACHE_H
#define AL_LANG_TOOLCHAIN_CACHE_H

#include "lang/locate.h"
#include "lang/table.h"

typedef struct al_toolchain_cache_key {
	const char *path_env;
	const char *candidate;
	char candidate_id[AL_FILE_ID_MAX];
	const char *helper; /* NULL when none was found */
	char helper_id[AL_FILE_ID_MAX];
} al_toolchain_cache_key;

/* 0 and a copy in *out on a hit, -ENOENT on a miss. */
int al_toolchain_cache_load(const al_lang_row *row, const al_toolchain_cache_key *key,
		    const char *cache_dir, al_toolchain **out);
/* Remembers tc (copied) in memory and, when cache_dir is given, on disk
 * (best effort: a cache that cannot be written is not an error). */
void al_toolchain_cache_store(const al_lang_row *row, const al_toolchain_cache_key *key,
		     const char *cache_dir, const al_toolchain *tc);
void al_toolchain_cache_forget(void);

#endif
