/* Internal: PATH lookups remembered within a process.
 *
 * Every probe looks every language's interpreter up on PATH, a stat per
 * directory and name (~250 per CLI run).  The answers cannot change while
 * no PATH directory changes, and inotify says when one does: the first
 * lookup for a PATH value watches its directories (entries created,
 * removed, renamed, their attributes changed; the directory itself
 * removed or moved), and a lookup reuses an answer only after a
 * non-blocking read of those events finds none.  A directory that did
 * not exist is stat'ed on each lookup (its appearance resets the
 * memo).  Without inotify (no instance left) every lookup searches. */
#ifndef AL_LANG_PATH_MEMO_H
#define AL_LANG_PATH_MEMO_H

/* search(path_env, name, out) does the real lookup (al_path_find's). */
typedef int (*al_path_search_fn)(const char *path_env, const char *name,
				 char **out);

/* As search, answered from the memo while PATH's directories are
 * unchanged. */
int al_path_memo_find(const char *path_env, const char *name,
		      al_path_search_fn search, char **out);

/* Forgets everything (tests; the watch is closed too). */
void al_path_memo_reset(void);

#endif
