/* Internal: PATH lookups remembered within a process.
 *
 * Every probe looks every language's interpreter up on PATH, a stat per
 * directory and name (~250 stats per CLI run).  An answer cannot change
 * while no PATH directory changes (identity, mtime, ctime): installing,
 * removing or renaming a program changes its directory.  So the answers
 * for one PATH value are kept with the state of its directories and
 * reused while a stat of each directory finds it as recorded; a program
 * found is also checked to be still executable.  Inside a hold (one probe
 * pass over every language) the directories are checked once, at the
 * first lookup: the pass sees PATH as it was then.  What this cannot see:
 * a program that was not the answer made executable in place (chmod +x
 * changes no directory) -- until its directory changes. */
#ifndef AL_LANG_PATH_MEMO_H
#define AL_LANG_PATH_MEMO_H

/* search(path_env, name, out) does the real lookup (al_path_find's). */
typedef int (*al_path_search_fn)(const char *path_env, const char *name,
				 char **out);

/* As search, answered from the memo while PATH's directories are
 * unchanged. */
int al_path_memo_find(const char *path_env, const char *name,
		      al_path_search_fn search, char **out);

/* Within a hold (this thread; nestable) the directories are checked once. */
void al_path_memo_hold(void);
void al_path_memo_release(void);

/* Forgets everything (tests). */
void al_path_memo_reset(void);

#endif
