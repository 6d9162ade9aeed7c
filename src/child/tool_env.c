/* The toolbelt's variables (see tool_env.h). */
#include "child/tool_env.h"

#include <errno.h>
#include <string.h>

#include "core/util.h"
#include "tool/proto.h"

int al_tool_env_add(const al_env_base *base, const al_exec *exec,
		    const char *path, al_env_put_fn put, void *ctx)
{
	int rc;
	if (exec->tool_dir == NULL || exec->tool_token == NULL ||
	    base->tool_dir == NULL || base->tool_bin_dir == NULL)
		return 0;
	if ((rc = put(ctx, al_strdup_printf("AIRLOCK_TOOL_SOCKET=%s/%s",
					       base->tool_dir,
					       AL_TOOL_SOCK_NAME))) < 0 ||
	    (rc = put(ctx, al_strdup_printf("AIRLOCK_TOOL_TOKEN_FILE=%s/%s",
					       base->tool_dir,
					       AL_TOOL_TOKEN_NAME))) < 0 ||
	    (rc = put(ctx, al_strdup_printf("AIRLOCK_TOOL_TOKEN=%s",
					       exec->tool_token))) < 0)
		return rc;
	return put(ctx,
		   path != NULL && path[0] != '\0'
			   ? al_strdup_printf("PATH=%s:%s", base->tool_bin_dir,
					      path)
			   : al_strdup_printf("PATH=%s", base->tool_bin_dir));
}
