/* Internal: the HTTP front (libmicrohttpd): request routing, bounded
 * bodies, typed JSON answers, server-sent events. */
#ifndef AL_SERVER_HTTP_H
#define AL_SERVER_HTTP_H

#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

#include "server/conns.h"
#include "server/service.h"

/* What the HTTP front needs besides the service: the cls of every
 * callback below. */
typedef struct al_http {
	al_service *svc;
	al_conns *conns;
	unsigned max_connections; /* per listener, as enforced */
} al_http;

/* The access handler and completion callback to install with
 * MHD_start_daemon (cls: the al_http). */
enum MHD_Result al_http_handle(void *cls, struct MHD_Connection *conn,
			       const char *url, const char *method,
			       const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls);
void al_http_completed(void *cls, struct MHD_Connection *conn,
		       void **con_cls, enum MHD_RequestTerminationCode toe);
/* The MHD_OPTION_UNESCAPE_CALLBACK: percent-decoding that leaves "%00" as
 * it is, so a decoded NUL can never cut a path or a query value short
 * ("/v1/runs/ID%00x" is not "/v1/runs/ID"). */
size_t al_http_unescape(void *cls, struct MHD_Connection *conn, char *s);

/* Notes the answer of the request this thread is handling (for its access
 * line) and adds its X-Request-Id header; call before MHD_queue_response.
 * streamed: the size is not known (bytes ignored). */
void al_http_answer(struct MHD_Response *resp, unsigned status, uint64_t bytes,
		    bool streamed);
/* A W3C traceparent header of version 00, checked strictly. */
bool al_http_traceparent_valid(const char *s);

/* Answers with a JSON body (text owned by the callee) and counts it. */
enum MHD_Result al_http_json(al_service *svc, struct MHD_Connection *conn,
			     unsigned status, char *text);
/* {"error": code, "message": message, "status": status}. */
enum MHD_Result al_http_error(al_service *svc, struct MHD_Connection *conn,
			      unsigned status, const char *code,
			      const char *message);

/* One output event of a stream: "event: stdout|stderr", its id, and
 * {"data": text} (UTF-8) or {"data_b64": ...}.  Caller frees. */
char *al_sse_format_output(uint64_t seq, int stream, const unsigned char *d,
			   size_t len);
/* GET /v1/runs/{id}/events for a referenced run (taken over). */
enum MHD_Result al_http_events(al_service *svc, struct MHD_Connection *conn,
			       al_srv_run *run);

#endif
