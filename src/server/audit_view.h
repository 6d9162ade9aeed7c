/* Internal: GET /v1/audit — a tenant's own audit records, read-only, with
 * the whole chain's verify status (docs/api.md, "Audit trail"). */
#ifndef AL_SERVER_AUDIT_VIEW_H
#define AL_SERVER_AUDIT_VIEW_H

#include <stddef.h>
#include <stdint.h>

/* {"records": [...newest first], "next_before": seq|null,
 *  "verify": {"ok": bool, "message"?: text}} as JSON text in *out.
 * before: only records with seq < before (0: from the newest); run_id:
 * only that run's (NULL: all).  0, or a negative errno (-ENOMEM; -EIO
 * when the trail cannot be read). */
int al_audit_view(const char *state_dir, const char *tenant,
		  const char *run_id, size_t limit, int64_t before, char **out);

#endif
