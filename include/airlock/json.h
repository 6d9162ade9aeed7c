/* airlock — the JSON form of the contract (field names: docs/contract.md).
 *
 * Parsing is strict: unknown fields, duplicate keys, trailing data, wrong
 * types, invalid UTF-8, NUL bytes in names/paths/env, and sizes or nesting
 * beyond the documented bounds are refused with AL_ERR_INVALID_REQUEST and
 * a reason naming the field path ("limits.memory_bytes", "files[2].path");
 * the offending value is never echoed.
 */
#ifndef AIRLOCK_JSON_H
#define AIRLOCK_JSON_H

#include <airlock/contract.h>
#include <airlock/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Documented bounds of a request. */
#define AL_MAX_REQUEST_BYTES (16u * 1024u * 1024u)
#define AL_MAX_CODE_BYTES (4u * 1024u * 1024u)
#define AL_MAX_STDIN_BYTES (4u * 1024u * 1024u)
#define AL_MAX_ARGS 256u
#define AL_MAX_ARG_BYTES 65536u
#define AL_MAX_ENV 128u
#define AL_MAX_ENV_NAME_BYTES 128u
#define AL_MAX_ENV_VALUE_BYTES 32768u
#define AL_MAX_FILES 256u
#define AL_MAX_FILE_PATH_BYTES 1024u
#define AL_MAX_FILES_TOTAL_BYTES (8u * 1024u * 1024u)
#define AL_MAX_OUTPUTS 64u
#define AL_MAX_SECRETS 32u
#define AL_MAX_KEY_BYTES 256u /* idempotency key, secret names, language */
#define AL_MAX_JSON_DEPTH 8u
/* Inbox events of a durable run (docs/durability.md). */
#define AL_MAX_INBOX_ID_BYTES 64u	      /* [A-Za-z0-9_-]{1,64} */
#define AL_MAX_INBOX_EVENT_BYTES (64u * 1024u) /* the event's JSON text */
#define AL_MAX_INBOX_EVENTS 1024u	      /* per run */
/* Environment a caller's host forwards with a run (docs/api.md,
 * X-Airlock-Forwarded-Env): entries, and bytes of the decoded JSON. */
#define AL_MAX_FORWARDED_ENV 64u
#define AL_MAX_FORWARDED_ENV_BYTES 8192u

/* Parses and validates a request.  On success *out is a new request with
 * limits defaults applied (limits.set records what was explicit). */
int al_request_from_json(const char *json, size_t len, al_request **out,
			 al_error **err);
/* Canonical JSON of a request (keys sorted, compact): two requests that
 * mean the same produce the same text, so idempotency can hash it.
 * Caller frees.  NULL on allocation failure. */
char *al_request_to_json(const al_request *req);
/* One-line text form for logs: language, sizes and sha256 of code and
 * stdin, argv count, files' paths and sizes, env NAMES only, limits,
 * grant.  Never code, stdin, file contents or env values.  Caller frees. */
char *al_request_describe(const al_request *req);

/* Result and facts.  pretty != 0 indents. Caller frees. */
char *al_result_to_json(const al_result *res, int pretty);
int al_result_from_json(const char *json, size_t len, al_result **out,
			al_error **err);
char *al_facts_to_json(const al_facts *facts, int pretty);
int al_facts_from_json(const char *json, size_t len, al_facts **out,
		       al_error **err);

/* Lower-case hex SHA-256 of data into hex[65]. */
void al_sha256_hex(const void *data, size_t len, char hex[65]);
/* true when [s, s+len) is valid UTF-8 (no overlongs, no surrogates). */
bool al_utf8_valid(const unsigned char *s, size_t len);
/* true when s is an inbox event id: [A-Za-z0-9_-]{1,64}. */
bool al_inbox_id_valid(const char *s);

#ifdef __cplusplus
}
#endif
#endif
