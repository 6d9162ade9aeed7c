/* Internal: finding programs and describing files without running them. */
#ifndef AL_LANG_LOCATE_H
#define AL_LANG_LOCATE_H

#include <stdbool.h>
#include <stddef.h>

/* "dev:ino:size:mtime_s.mtime_ns" of the file path refers to (symlinks
 * followed): equal strings mean the same unchanged file. */
#define AL_FILE_ID_MAX 96
int al_file_id(const char *path, char id[AL_FILE_ID_MAX]);

/* First executable regular file `name` in the PATH value path_env
 * (empty entries are skipped, never meaning "."; relative entries are
 * skipped too).  0 and *out (absolute, not resolved), or -ENOENT. */
int al_path_find(const char *path_env, const char *name, char **out);

/* The file starts with "#!" (a script: possibly a version-manager shim). */
bool al_file_is_script(const char *path);
/* The file is an ELF executable (runs without any interpreter of ours). */
bool al_file_is_elf(const char *path);

/* Finds esbuild's native binary: on PATH, else in the airlock tools dir
 * (AIRLOCK_TOOLS_DIR, else <dir of this executable>/../tools), as
 * node_modules/.bin/esbuild resolved to the platform package's binary
 * (node_modules/@esbuild/<platform>/bin/esbuild) so that running it needs
 * no node.  0 and *out (canonical), or -ENOENT. */
int al_esbuild_find(const char *path_env, char **out);

/* path is one of, or lies below, the standard system dirs (/usr, /bin,
 * /sbin, /lib*, /etc) or is "/" itself. */
bool al_path_is_system(const char *path);

/* Turns candidate directories into a toolchain's extra roots: each is
 * canonicalised (missing ones dropped), system dirs dropped, and a dir
 * below another kept one dropped.  *out is NULL-terminated (possibly just
 * {NULL}). */
int al_roots_build(char *const *dirs, char ***out);

#endif
