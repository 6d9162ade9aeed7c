/* Internal: the drop-in Piston v2 and Judge0 CE APIs (docs/compat.md).
 * Off unless the configuration's "compat" key enables them; each request
 * becomes an ordinary airlock run (same gates, audit, slots, limits and
 * metrics as /v1) and its result is translated back. */
#ifndef AL_SERVER_COMPAT_H
#define AL_SERVER_COMPAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <microhttpd.h>

#include <airlock/error.h>

#include "server/service.h"

typedef enum al_compat_kind {
	AL_COMPAT_NONE = 0,
	AL_COMPAT_PISTON,
	AL_COMPAT_JUDGE0,
	AL_COMPAT_V1 /* /v1/connect: airlock's own interactive mode */
} al_compat_kind;

/* One API's section: "piston" or "judge0". */
typedef struct al_compat_api {
	bool enabled;
	char *anonymous_tenant; /* NULL: every request needs a token */
	/* The anonymous tenant's request rate: at most rate_requests per
	 * rate_per_s seconds (required with anonymous_tenant). */
	unsigned rate_requests, rate_per_s;
	/* Judge0's callback_url: the origins ("http://host:port") a
	 * callback may go to (none: callbacks are refused), the tries and
	 * each try's timeout. */
	char **callback_allow;
	size_t n_callback_allow;
	unsigned callback_tries, callback_timeout_ms;
} al_compat_api;

typedef struct al_compat_cfg {
	al_compat_api piston, judge0;
} al_compat_cfg;

/* compat_config.c */
/* Reads the configuration's "compat" object; *out is NULL when absent. */
int al_compat_cfg_parse(const char *text, size_t len, al_compat_cfg **out,
			al_error **err);
void al_compat_cfg_free(al_compat_cfg *cfg);
/* A file with "compat" but neither "providers" nor "tenants" is laid on
 * top of the built-in defaults: *merged (caller frees) is the text to
 * parse, or NULL when the file is complete as it is. */
int al_compat_overlay_defaults(const char *text, size_t len, char **merged,
			       size_t *mlen, al_error **err);

/* compat_http.c: which API a path belongs to (by path alone). */
al_compat_kind al_compat_match(const char *url);
/* The first call (headers only): 1 when answered (*ret set), 0 to go on
 * reading the body. */
int al_compat_first(al_service *svc, struct MHD_Connection *conn,
		    const char *url, const char *method, char tenant[256],
		    enum MHD_Result *ret);
/* The whole request is in. */
enum MHD_Result al_compat_answer(al_service *svc, struct MHD_Connection *conn,
				 const char *url, const char *method,
				 const char *body, size_t len, bool too_large,
				 bool oom);

/* What a compat handler is given. */
typedef struct al_compat_req {
	al_service *svc;
	struct MHD_Connection *conn;
	const char *url, *method;
	const char *body;
	size_t len;
	char tenant[256];
	char principal[24];
} al_compat_req;

/* Queues a JSON answer (takes j) with extra header (or NULL). */
enum MHD_Result al_compat_send(const al_compat_req *q, unsigned status,
			       json_t *j, const char *hname,
			       const char *hvalue);
enum MHD_Result al_compat_send_text(const al_compat_req *q, unsigned status,
				    const char *text, const char *ctype);

/* compat_run.c: one airlock run from a /v1 request object. */
typedef struct al_compat_out {
	json_t *result;	    /* the /v1 result (NULL on failure) */
	unsigned status;    /* the HTTP status /v1 would answer */
	char run_id[40];
	bool done;
	bool queued; /* al_compat_lookup: running but not started yet */
	/* stdout and stderr as they arrived, when every chunk was seen. */
	unsigned char *output;
	size_t output_len;
	bool output_whole;
} al_compat_out;

/* Submits req (a /v1 request object) for tenant.  wait: until done,
 * collecting interleaved output; else until admitted or refused.
 * 0, -ESHUTDOWN, -EAGAIN, -ENOMEM. */
int al_compat_run(al_service *svc, const char *tenant, const char *principal,
		  json_t *req, bool wait, al_compat_out *out);
void al_compat_out_clear(al_compat_out *out);
/* Bytes as a JSON string; invalid UTF-8 bytes become U+FFFD. */
json_t *al_compat_text(const unsigned char *p, size_t n);
/* A run of tenant: 1 running, 0 done (out->result set), -ENOENT. */
int al_compat_lookup(al_service *svc, const char *tenant, const char *run_id,
		     al_compat_out *out);
/* The observed languages: [{language, toolchain, version, path}] of every
 * available provider, first seen wins.  NULL on failure. */
json_t *al_compat_languages(al_service *svc, const char *tenant);
/* The tenant's ceiling of a limit ("memory_bytes", ...), 0 when none. */
uint64_t al_compat_ceiling(al_service *svc, const char *tenant,
			   const char *limit);
/* A result stream as bytes: "stdout" reads stdout or stdout_b64. */
int al_compat_stream(const json_t *result, const char *name,
		     unsigned char **out, size_t *len);

/* compat_store.c: a Judge0 submission's own fields by token (taken
 * with a reference; get returns a copy, NULL when unknown). */
void al_compat_store_put(const char *tenant, const char *token, json_t *sub,
			 size_t bytes);
json_t *al_compat_store_get(const char *tenant, const char *token);
/* Adds run_id to the submission's "_runs", or (run_id NULL) marks its
 * sequence of runs over ("_repeat_done"). */
void al_compat_store_add_run(const char *tenant, const char *token,
			     const char *run_id);
void al_compat_store_clear(void);

/* compat_repeat.c: Judge0's number_of_runs, the runs after the first
 * (token's), one after the other while each is Accepted. */
typedef struct al_compat_repeat {
	al_service *svc;
	char *tenant, *principal;
	char token[40];
	json_t *req; /* the /v1 request each run is given */
	unsigned runs;
	/* The callback, sent once the sequence is over (cb_url NULL:
	 * none). */
	char *cb_url;
	bool b64;
	unsigned cb_tries, cb_timeout_ms;
} al_compat_repeat;
al_compat_repeat *al_compat_repeat_new(al_service *svc, const char *tenant,
				       const char *principal,
				       const char *token, const json_t *req,
				       unsigned runs);
/* Runs the sequence in the caller's thread (wait=true). */
void al_compat_repeat_run(al_compat_repeat *r);
/* Runs it from a thread of its own (which frees r). */
int al_compat_repeat_start(al_compat_repeat *r);
void al_compat_repeat_free(al_compat_repeat *r);
/* Waits for the sequences' threads (service teardown). */
void al_compat_repeats_stop(void);
/* compat_judge0.c: whether run_id (a run of token's submission) is
 * Accepted, the condition for the next of number_of_runs. */
bool al_compat_judge0_accepted(al_service *svc, const char *tenant,
			       const char *token, const char *run_id);

/* compat_zip.c: a zip archive's regular files as /v1 request files
 * [{path, content_b64, mode?}]; -EINVAL with *why for an archive that is
 * refused. */
#define AL_COMPAT_ZIP_MAX_FILES 256u
#define AL_COMPAT_ZIP_MAX_BYTES (8u << 20)
int al_compat_unzip(const unsigned char *data, size_t len, json_t **out,
		    const char **why);

/* compat_callback.c: Judge0's callback_url.  The origin of url when an
 * allowed destination of api (written to origin[256]), else false. */
bool al_compat_callback_allowed(const al_compat_api *api, const char *url,
				char origin[256]);
/* PUTs the finished submission to url from a thread of its own, with
 * retries and backoff, and audits the outcome.  0 or negative errno. */
int al_compat_callback_start(al_service *svc, const char *tenant,
			     const char *principal, const char *token,
			     const char *url, bool b64, unsigned tries,
			     unsigned timeout_ms);
/* Wakes the callback threads and waits for them (service teardown). */
void al_compat_callbacks_stop(void);
/* compat_judge0.c: a submission's callback body (default fields). */
json_t *al_compat_judge0_body(al_service *svc, const char *tenant,
			      const char *token, bool b64);

/* compat_ws.c: the WebSocket session of /api/v2/connect (Piston's
 * protocol) and /v1/connect; 426 unless the request is an upgrade. */
enum MHD_Result al_compat_ws_answer(const al_compat_req *q,
				    al_compat_kind kind);
/* Ends every session and waits up to wait_ms until none is left, before
 * libmicrohttpd stops (a session's upgrade handle dies with it).  False
 * when one is still going: it then never uses its handle again. */
bool al_compat_ws_end(unsigned wait_ms);
/* Waits for the sessions to end (they end once the service closes). */
void al_compat_ws_stop(void);

/* compat_piston.c / compat_judge0.c */
enum MHD_Result al_compat_piston(const al_compat_req *q);
enum MHD_Result al_compat_judge0(const al_compat_req *q);

#endif
