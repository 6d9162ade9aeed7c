/* The argv of an exec request (child/exec_shape.h). */
#include "child/exec_shape.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util.h"

static bool clean_absolute(const char *p)
{
	if (p[0] != '/')
		return false;
	size_t n = strlen(p);
	if (n > 1 && p[n - 1] == '/')
		return false;
	for (const char *s = p; *s != '\0'; s++) {
		if (*s != '/')
			continue;
		/* every segment after this '/' */
		const char *seg = s + 1;
		size_t len = strcspn(seg, "/");
		if (len == 0 && seg[0] != '\0')
			return false;
		if ((len == 1 && seg[0] == '.') ||
		    (len == 2 && seg[0] == '.' && seg[1] == '.'))
			return false;
	}
	return true;
}

static bool beneath(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* The real path of an executable regular file beneath one of roots (a
 * root that is itself a link, /bin -> usr/bin, counts by its target). */
static char *resolve_program(const char *program, const char *const *roots,
			     size_t n_roots)
{
	char real[PATH_MAX], root_real[PATH_MAX];
	struct stat st;
	bool inside = false;
	if (!clean_absolute(program) || realpath(program, real) == NULL ||
	    stat(real, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_mode & 0111) == 0)
		return NULL;
	/* roots NULL: an interpreter the facts list, whose own roots the
	 * provider makes visible */
	inside = roots == NULL;
	for (size_t i = 0; roots != NULL && i < n_roots && !inside; i++)
		inside = realpath(roots[i], root_real) != NULL &&
			 beneath(real, root_real);
	return inside ? strdup(real) : NULL;
}

int al_exec_shape_argv(const al_facts *facts, const al_request *req,
		       const char *const *roots, size_t n_roots,
		       char ***argv)
{
	const char *program = req->exec[0];
	char *resolved = NULL;
	*argv = NULL;
	if (strchr(program, '/') == NULL) {
		const al_language_fact *lf =
			al_facts_find_language(facts, program);
		if (lf != NULL && lf->path != NULL)
			resolved = resolve_program(lf->path, NULL, 0);
	} else {
		resolved = resolve_program(program, roots, n_roots);
	}
	if (resolved == NULL)
		return -EINVAL;
	char **v = calloc(req->n_exec + 1, sizeof(char *));
	if (v == NULL) {
		free(resolved);
		return -ENOMEM;
	}
	v[0] = resolved;
	for (size_t i = 1; i < req->n_exec; i++)
		if ((v[i] = strdup(req->exec[i])) == NULL) {
			al_strv_free(v, req->n_exec);
			return -ENOMEM;
		}
	*argv = v;
	return 0;
}
