/* Internal: observing one toolchain afresh (no cache) by asking the
 * interpreter about itself: one probe process per language. */
#ifndef AL_LANG_OBSERVE_H
#define AL_LANG_OBSERVE_H

#include "lang/table.h"

/* Observes row's interpreter found on PATH at `candidate` (absolute, may
 * be a version-manager shim).  The probe runs with PATH=path_env.  0 and
 * *out; -ENOENT (err set) when the candidate is unusable; another negative
 * errno on failure.  Not for AL_PROBE_TYPESCRIPT. */
int al_observe_interpreter(const al_lang_row *row, const char *candidate,
			   const char *path_env, al_toolchain **out,
			   al_error **err);

/* Parses a probe's output: "V <version text>", "E <executable>",
 * "P <prefix dir>" lines, plus /proc/self/maps lines whose mapped files'
 * directories are collected.  Exposed for the unit tests. */
int al_observe_parse(const char *text, char **version_text, char **exe,
		     char ***dirs);

/* Version of an installed Debian package from a dpkg status file:
 * "0.5.12" for dash's "0.5.12-2".  0, -ENOENT, or another errno. */
int al_dpkg_version(const char *status_file, const char *package, char *out,
		    size_t outsz);

#endif
