/* The compat APIs' front (docs/compat.md): which paths are theirs, who
 * the caller is, and the answer helpers.  Compatibility wins over
 * strictness here: the query, headers and content type are read as the
 * real Piston and Judge0 read them, while /v1 keeps its strict checks. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server/compat.h"
#include "server/http.h"
#include "server/rate.h"

al_compat_kind al_compat_match(const char *url)
{
	static const char *const judge0[] = {
		"/submissions", "/languages", "/statuses",    "/about",
		"/version",	"/config_info", "/system_info", NULL};
	if (strncmp(url, "/api/v2/", 8) == 0)
		return AL_COMPAT_PISTON;
	if (strcmp(url, "/v1/connect") == 0)
		return AL_COMPAT_V1;
	for (size_t i = 0; judge0[i] != NULL; i++) {
		size_t n = strlen(judge0[i]);
		if (strncmp(url, judge0[i], n) == 0 &&
		    (url[n] == '\0' || url[n] == '/'))
			return AL_COMPAT_JUDGE0;
	}
	return AL_COMPAT_NONE;
}

enum MHD_Result al_compat_send_text(const al_compat_req *q, unsigned status,
				    const char *text, const char *ctype)
{
	char *copy = strdup(text);
	if (copy == NULL)
		return MHD_NO;
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		strlen(copy), copy, MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(copy);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	al_http_answer(resp, status, strlen(text), false);
	enum MHD_Result ret = MHD_queue_response(q->conn, status, resp);
	MHD_destroy_response(resp);
	al_srv_metrics_http(q->svc->metrics, status);
	return ret;
}

static enum MHD_Result send_json(al_service *svc, struct MHD_Connection *conn,
				 unsigned status, json_t *j, const char *hname,
				 const char *hvalue)
{
	char *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER |
					       JSON_ENCODE_ANY)
		       : NULL;
	json_decref(j);
	if (text == NULL)
		return MHD_NO;
	struct MHD_Response *resp = MHD_create_response_from_buffer(
		strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				"application/json; charset=utf-8");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (hname != NULL)
		MHD_add_response_header(resp, hname, hvalue);
	al_http_answer(resp, status, strlen(text), false);
	enum MHD_Result ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	al_srv_metrics_http(svc->metrics, status);
	return ret;
}

enum MHD_Result al_compat_send(const al_compat_req *q, unsigned status,
			       json_t *j, const char *hname,
			       const char *hvalue)
{
	return send_json(q->svc, q->conn, status, j, hname, hvalue);
}

/* Each API's error shape: Piston {"message"}, Judge0 {"error"}. */
static enum MHD_Result api_error(al_service *svc, struct MHD_Connection *conn,
				 al_compat_kind kind, unsigned status,
				 const char *message, const char *hname,
				 const char *hvalue)
{
	if (kind == AL_COMPAT_V1)
		return send_json(svc, conn, status,
				 json_pack("{s:s, s:s, s:i}", "error",
					   status == 401 ? "unauthorized"
							 : "invalid_request",
					   "message", message, "status",
					   (int)status),
				 hname, hvalue);
	json_t *j = json_pack("{s:s}",
			      kind == AL_COMPAT_PISTON ? "message" : "error",
			      message);
	return send_json(svc, conn, status, j, hname, hvalue);
}

static const al_compat_api *api_of(const al_srv_gen *gen, al_compat_kind kind)
{
	/* /v1/connect is airlock's own API: always on, tokens only. */
	static const al_compat_api v1 = {.enabled = true};
	if (kind == AL_COMPAT_V1)
		return gen != NULL ? &v1 : NULL;
	if (gen == NULL || gen->compat == NULL)
		return NULL;
	const al_compat_api *a = kind == AL_COMPAT_PISTON
					 ? &gen->compat->piston
					 : &gen->compat->judge0;
	return a->enabled ? a : NULL;
}

/* The caller's tenant: a bearer token, Judge0's X-Auth-Token, or the
 * section's anonymous tenant when no credential is presented at all (a
 * wrong credential is refused, never treated as anonymous).  *rate is set
 * when the anonymous tenant's rate refuses the request. */
static const char *caller(al_srv_gen *gen, struct MHD_Connection *conn,
			  al_compat_kind kind, const al_compat_api *api,
			  char principal[24], bool take, unsigned *retry)
{
	const char *authz = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	const char *xtok = kind == AL_COMPAT_JUDGE0
				   ? MHD_lookup_connection_value(
					     conn, MHD_HEADER_KIND,
					     "X-Auth-Token")
				   : NULL;
	*retry = 0;
	if (authz != NULL)
		return al_auth_tenant(gen->auth, authz, principal);
	if (xtok != NULL) {
		char buf[600];
		if (strlen(xtok) > 512)
			return NULL;
		snprintf(buf, sizeof(buf), "Bearer %s", xtok);
		return al_auth_tenant(gen->auth, buf, principal);
	}
	if (api->anonymous_tenant == NULL)
		return NULL;
	snprintf(principal, 24, "anonymous:%s",
		 kind == AL_COMPAT_PISTON ? "piston" : "judge0");
	if (take && api->rate_requests > 0)
		*retry = al_srv_rate_take(kind == AL_COMPAT_PISTON
						  ? "anonymous:piston"
						  : "anonymous:judge0",
					  api->rate_requests, api->rate_per_s);
	return api->anonymous_tenant;
}

static int authenticate(al_service *svc, struct MHD_Connection *conn,
			al_compat_kind kind, char tenant[256],
			char principal[24], bool take, enum MHD_Result *ret)
{
	al_srv_gen *gen = al_service_gen_get(svc);
	const al_compat_api *api = api_of(gen, kind);
	unsigned retry = 0;
	const char *t = NULL;
	if (api != NULL)
		t = caller(gen, conn, kind, api, principal, take, &retry);
	if (t != NULL)
		snprintf(tenant, 256, "%s", t);
	al_service_gen_put(svc, gen);
	/* The tenant's own request rate, as on every route. */
	if (t != NULL && take && retry == 0)
		retry = al_srv_tenant_rate(svc, tenant);
	if (api == NULL) {
		*ret = al_http_error(svc, conn, 404, "not_found",
				     "no such endpoint");
		return 1;
	}
	if (t == NULL) {
		*ret = api_error(svc, conn, kind, 401,
				 kind == AL_COMPAT_JUDGE0
					 ? "Authentication failed."
					 : "a valid bearer token is required",
				 MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
		return 1;
	}
	if (retry > 0) {
		char s[16];
		snprintf(s, sizeof(s), "%u", retry);
		al_srv_metrics_rate_limited(svc->metrics);
		*ret = api_error(svc, conn, kind, 429,
				 "too many requests: the request rate is "
				 "spent",
				 "Retry-After", s);
		return 1;
	}
	return 0;
}

int al_compat_first(al_service *svc, struct MHD_Connection *conn,
		    const char *url, const char *method, char tenant[256],
		    enum MHD_Result *ret)
{
	char principal[24] = "";
	al_compat_kind kind = al_compat_match(url);
	if (authenticate(svc, conn, kind, tenant, principal, true, ret))
		return 1;
	bool body = strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0 ||
		    strcmp(method, "DELETE") == 0;
	const char *cl = MHD_lookup_connection_value(
		conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	unsigned long long n = cl != NULL ? strtoull(cl, NULL, 10) : 0;
	if (body && n > svc->opts.max_body_bytes) {
		*ret = api_error(svc, conn, kind, 413,
				 "the request body is too large", NULL, NULL);
		return 1;
	}
	return 0;
}

enum MHD_Result al_compat_answer(al_service *svc, struct MHD_Connection *conn,
				 const char *url, const char *method,
				 const char *body, size_t len, bool too_large,
				 bool oom)
{
	al_compat_req q = {.svc = svc, .conn = conn, .url = url,
			   .method = method, .body = body ? body : "",
			   .len = body ? len : 0};
	al_compat_kind kind = al_compat_match(url);
	enum MHD_Result ret;
	/* Checked again: a reload between the calls may have changed it. */
	if (authenticate(svc, conn, kind, q.tenant, q.principal, false,
			 &ret))
		return ret;
	if (too_large)
		return api_error(svc, conn, kind, 413,
				 "the request body is too large", NULL, NULL);
	if (oom)
		return api_error(svc, conn, kind, 503, "out of memory", NULL,
				 NULL);
	if (kind == AL_COMPAT_V1)
		return al_compat_ws_answer(&q, kind);
	return kind == AL_COMPAT_PISTON ? al_compat_piston(&q)
					: al_compat_judge0(&q);
}
