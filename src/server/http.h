/* Internal: the HTTP front (libmicrohttpd): request routing, bounded
 * bodies, typed JSON answers, server-sent events. */
#ifndef AL_SERVER_HTTP_H
#define AL_SERVER_HTTP_H

#include <microhttpd.h>

#include "server/service.h"

/* The access handler and completion callback to install with
 * MHD_start_daemon (cls: the al_service). */
enum MHD_Result al_http_handle(void *cls, struct MHD_Connection *conn,
			       const char *url, const char *method,
			       const char *version, const char *upload_data,
			       size_t *upload_data_size, void **con_cls);
void al_http_completed(void *cls, struct MHD_Connection *conn,
		       void **con_cls, enum MHD_RequestTerminationCode toe);

/* Answers with a JSON body (text owned by the callee) and counts it. */
enum MHD_Result al_http_json(al_service *svc, struct MHD_Connection *conn,
			     unsigned status, char *text);
/* {"error": code, "message": message, "status": status}. */
enum MHD_Result al_http_error(al_service *svc, struct MHD_Connection *conn,
			      unsigned status, const char *code,
			      const char *message);

/* GET /v1/runs/{id}/events for a referenced run (taken over). */
enum MHD_Result al_http_events(al_service *svc, struct MHD_Connection *conn,
			       al_srv_run *run);

#endif
