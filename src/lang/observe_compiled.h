/* Internal: observing a compiler afresh (no cache): c and c++ (gcc),
 * go, rust (rustup proxies seen through), java (javac and its java). */
#ifndef AL_LANG_OBSERVE_COMPILED_H
#define AL_LANG_OBSERVE_COMPILED_H

#include "lang/table.h"

/* Observes row's compiler found on PATH at `candidate`; the probes run
 * with PATH=path_env.  0 and *out; -ENOENT (err set) when absent or
 * unusable; another negative errno on failure.  For java, helper_path is
 * the JDK's own `java`. */
int al_observe_compiler(const al_lang_row *row, const char *candidate,
			const char *path_env, al_toolchain **out,
			al_error **err);

#endif
