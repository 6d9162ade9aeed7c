/* Internal: a cache directory holding one small file per key. */
#ifndef AL_CORE_CACHE_FILES_H
#define AL_CORE_CACHE_FILES_H

/* Keeps at most keep of dir's files named PREFIX*.json (not following
 * symlinks): the least recently modified go first.  Best effort: a
 * directory that cannot be listed is left as it is. */
void al_cache_files_prune(const char *dir, const char *prefix, int keep);

/* Removes every file of dir named PREFIX*.json. */
void al_cache_files_remove(const char *dir, const char *prefix);

#endif
