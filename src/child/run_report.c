/* The run's own report in its result (child/run_report.h). */
#include "child/run_report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "child/artifacts.h"

int al_run_report_fill(al_result *res, const al_request *req,
		       const al_run_report *rep)
{
	if (!al_outcome_ran(res->outcome) || res->workspace_kind != NULL)
		return 0;
	char size[48] = "unbounded";
	if (rep->ws_bytes > 0) {
		if (rep->ws_bytes % (1u << 20) == 0)
			snprintf(size, sizeof(size), "%llu MiB",
				 (unsigned long long)(rep->ws_bytes >> 20));
		else
			snprintf(size, sizeof(size), "%llu bytes",
				 (unsigned long long)rep->ws_bytes);
	}
	res->workspace_kind = strdup("scratch");
	res->workspace_summary = al_strdup_printf(
		"a private %s made for this run (%s, %s), removed after it",
		rep->where, al_workspace_mode_name(req->grant.workspace), size);
	res->workspace_bytes = rep->ws_bytes;
	res->timeout_ms = req->limits.wall_ms;
	bool log_kept = rep->store_dirfd >= 0 &&
			faccessat(rep->store_dirfd, AL_ARTIFACT_LOG, F_OK,
				  AT_SYMLINK_NOFOLLOW) == 0;
	if (log_kept)
		res->log_artifact = strdup(AL_ARTIFACT_LOG);
	if (res->workspace_kind == NULL || res->workspace_summary == NULL ||
	    (log_kept && res->log_artifact == NULL))
		return -ENOMEM;
	return 0;
}
