/* airlock run --exec: the exec shape of a request (docs/contract.md). */
#include <errno.h>

#include <jansson.h>

#include "cli/cli.h"

int cli_exec_shape(json_t *req, const char *prog)
{
	json_t *exec = json_array();
	json_t *args = json_object_get(req, "argv");
	size_t i;
	json_t *a;
	if (exec == NULL || json_array_append_new(exec, json_string(prog)) < 0)
		goto oom;
	json_array_foreach(args, i, a)
		if (json_array_append(exec, a) < 0)
			goto oom;
	json_object_del(req, "language");
	json_object_del(req, "code");
	json_object_del(req, "argv");
	if (json_object_set_new(req, "exec", exec) < 0)
		return -ENOMEM;
	return 0;
oom:
	json_decref(exec);
	cli_error("run: out of memory");
	return -ENOMEM;
}
