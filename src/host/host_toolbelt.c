/* The toolbelt of an in-process run (see host_toolbelt.h). */
#include "host/host_toolbelt.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <airlock/json.h>

#include "core/util.h"
#include "child/rundir.h"

int al_host_tb_start(al_host_tb *t, const char *state_dir, const char *run_id,
		     const al_request *req, const char *ops_json,
		     int64_t deadline_ms)
{
	char *base = al_strdup_printf("%s/toolbelt", state_dir);
	char *canon = NULL;
	int rc = 0;
	memset(t, 0, sizeof(*t));
	t->dirfd = -1;
	if ((t->bin = al_toolbelt_bin_dir()) == NULL) {
		rc = -ENOENT;
		goto out;
	}
	if (base == NULL ||
	    (t->dir = al_strdup_printf("%s/%s", base, run_id)) == NULL ||
	    (canon = al_request_to_json(req)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	if ((mkdir(base, 0700) < 0 && errno != EEXIST) ||
	    mkdir(t->dir, 0700) < 0 ||
	    (t->dirfd = open(t->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					     O_CLOEXEC)) < 0) {
		rc = -errno;
		goto out;
	}
	if ((rc = al_toolbelt_persist_operations(t->dirfd, ops_json)) < 0)
		goto out;
	if ((t->tool_dir = al_toolbelt_dir(t->dir)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	al_toolbelt_cfg cfg = {.run_dirfd = t->dirfd, .run_id = run_id,
			       .request_json = canon,
			       .deadline_ms = deadline_ms, .outlog_fd = -1,
			       .webhook = al_tool_webhook_post};
	rc = al_toolbelt_start(&cfg, t->token, &t->tb);
out:
	free(base);
	free(canon);
	if (rc < 0)
		(void)al_host_tb_finish(t, NULL);
	return rc;
}

int al_host_tb_finish(al_host_tb *t, al_result *res)
{
	int rc = 0;
	if (t->tb != NULL)
		rc = al_toolbelt_finish(t->tb, res);
	t->tb = NULL;
	if (t->dirfd >= 0)
		close(t->dirfd);
	t->dirfd = -1;
	char *slash = t->dir != NULL ? strrchr(t->dir, '/') : NULL;
	if (slash != NULL) {
		*slash = '\0';
		int pfd = open(t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd >= 0) {
			(void)al_remove_tree_at(pfd, slash + 1);
			close(pfd);
		}
	}
	free(t->dir);
	free(t->tool_dir);
	free(t->bin);
	t->dir = t->tool_dir = t->bin = NULL;
	explicit_bzero(t->token, sizeof(t->token));
	return rc;
}
