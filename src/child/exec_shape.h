/* Internal: the "exec" execution shape (docs/contract.md): the argv a
 * provider runs for a request that gives exec instead of code. */
#ifndef AL_PROC_EXEC_SHAPE_H
#define AL_PROC_EXEC_SHAPE_H

#include <stddef.h>

#include <airlock/contract.h>

/* PATH of an exec run: no interpreter's directory comes first. */
#define AL_EXEC_SHAPE_PATH "/usr/local/bin:/usr/bin:/bin"

/* The program exec[0] names: a language of the facts (its interpreter,
 * "python" -> /usr/bin/python3, whose directories the provider must make
 * visible as for code in that language), or an absolute, clean path to a regular
 * executable file whose real path lies beneath one of roots (the
 * read-only system directories a run sees at the same paths).  *argv
 * (NULL-terminated; al_strv_free_all) is exec with its program resolved
 * to that real path.  0; -EINVAL when the program is refused; -ENOMEM. */
int al_exec_shape_argv(const al_facts *facts, const al_request *req,
		       const char *const *roots, size_t n_roots,
		       char ***argv);

#endif
