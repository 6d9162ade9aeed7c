/* Outcome → HTTP status (docs/api.md, "Status codes").  A run that ran
 * answers 200 whatever its outcome: the HTTP exchange succeeded and the
 * outcome is in the body.  Refusals answer the status that tells a
 * generic HTTP client the right thing about retrying. */
#include <string.h>

#include "server/service.h"

unsigned al_srv_status_for(al_outcome outcome, const char *reason)
{
	switch (outcome) {
	case AL_OUTCOME_INVALID_REQUEST:
		return 400;
	case AL_OUTCOME_DENIED:
		/* A run to continue that this tenant cannot see: as for any
		 * other unknown run. */
		return reason != NULL && strcmp(reason, "continues:not_found") == 0
			       ? 404
			       : 403;
	case AL_OUTCOME_UNSUPPORTED_LANGUAGE:
	case AL_OUTCOME_UNENFORCEABLE_LIMIT:
		return 422;
	case AL_OUTCOME_CONFLICT:
		return 409;
	case AL_OUTCOME_DISABLED:
		return 503;
	case AL_OUTCOME_UNAVAILABLE:
		/* Busy is the one refusal a client should simply retry. */
		return reason != NULL && strcmp(reason, "busy") == 0 ? 429
								     : 503;
	default:
		return 200;
	}
}
