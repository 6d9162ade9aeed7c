/* libFuzzer target: the HTTP front's parsing (src/server/http.c) — the
 * router, the method table, query booleans, the bounded body reader —
 * without a daemon.  The file is included so its static functions are
 * reachable; MHD_lookup_connection_value is renamed to a lookup in the
 * query this target parsed, so bool_arg reads fuzzed arguments.
 *
 * Input: the first byte picks what is fuzzed, the rest is its input.
 *   0  a request target "PATH?QUERY": the path decoded the way
 *      libmicrohttpd decodes it (MHD_http_unescape) is routed; the query
 *      split into arguments and "wait" read as a boolean.
 *   1  a body for the bounded reader, in chunks (the next byte gives a
 *      chunk's length).
 * Checked: a run route's id and artifact id are valid and are exactly
 * the bytes of the path; every route's allowed methods are the ones its
 * Allow header lists; a boolean is true, false or refused, and true only
 * for "true"/"1"; the body reader keeps the bytes in order and never more
 * than its bound. */
#include <microhttpd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fuzz_query;
const char *fuzz_lookup_value(struct MHD_Connection *conn,
			      enum MHD_ValueKind kind, const char *key);
#define MHD_lookup_connection_value fuzz_lookup_value
#include "server/http.c"
#undef MHD_lookup_connection_value

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_ARGS 16
struct fuzz_query {
	size_t n;
	char *key[FZ_MAX_ARGS], *value[FZ_MAX_ARGS];
};

/* The first value of key, as libmicrohttpd answers a lookup. */
const char *fuzz_lookup_value(struct MHD_Connection *conn,
			      enum MHD_ValueKind kind, const char *key)
{
	const struct fuzz_query *q = (const struct fuzz_query *)conn;
	if (kind != MHD_GET_ARGUMENT_KIND)
		return NULL;
	for (size_t i = 0; i < q->n; i++)
		if (strcmp(q->key[i], key) == 0)
			return q->value[i];
	return NULL;
}

static const char *const fz_methods[] = {
	"GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH", "get", "",
	"TRACE", NULL};

/* Is method one of the comma-separated names in list? */
static bool fz_listed(const char *list, const char *method)
{
	size_t n = strlen(method);
	for (const char *p = list; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (n > 0 && len == n && memcmp(p, method, n) == 0)
			return true;
		if (end == NULL)
			break;
		p = end + 1;
		while (*p == ' ')
			p++;
	}
	return false;
}

static void fz_check_route(char *path)
{
	char run_id[40], art[33];
	memset(run_id, 0x55, sizeof(run_id));
	memset(art, 0x55, sizeof(art));
	enum route r = route_of(path, run_id, art);
	/* the routes that name a run: /v1/runs/{id}[/...] */
	if (r >= R_RUN && r <= R_RUN_ARTIFACT) {
		static const char pre[] = "/v1/runs/";
		size_t idlen = strnlen(run_id, sizeof(run_id));
		if (idlen == sizeof(run_id) || !valid_run_id(run_id, idlen) ||
		    strncmp(path, pre, sizeof(pre) - 1) != 0 ||
		    memcmp(path + sizeof(pre) - 1, run_id, idlen) != 0)
			abort();
		const char *rest = path + sizeof(pre) - 1 + idlen;
		if ((r == R_RUN && *rest != '\0') ||
		    (r != R_RUN && *rest != '/'))
			abort();
		if (r == R_RUN_ARTIFACT &&
		    (strnlen(art, sizeof(art)) == sizeof(art) ||
		     !al_artifact_id_valid(art) ||
		     strcmp(rest + strlen("/artifacts/"), art) != 0))
			abort();
	}
	for (const char *const *m = fz_methods; *m; m++)
		if (r != R_NONE &&
		    method_allowed(r, *m) != fz_listed(allowed_methods(r), *m)) {
			fprintf(stderr, "route %d: %s allowed=%d, Allow: %s\n",
				(int)r, *m, method_allowed(r, *m),
				allowed_methods(r));
			abort();
		}
}

static void fz_check_query(char *query)
{
	struct fuzz_query q = {0};
	for (char *save = NULL, *arg = strtok_r(query, "&", &save);
	     arg != NULL && q.n < FZ_MAX_ARGS; arg = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(arg, '=');
		if (eq != NULL)
			*eq = '\0';
		MHD_http_unescape(arg);
		q.key[q.n] = arg;
		q.value[q.n] = eq != NULL ? eq + 1 : arg + strlen(arg);
		MHD_http_unescape(q.value[q.n]);
		q.n++;
	}
	struct MHD_Connection *conn = (struct MHD_Connection *)&q;
	const char *v = fuzz_lookup_value(conn, MHD_GET_ARGUMENT_KIND, "wait");
	int b = bool_arg(conn, "wait", 7);
	if (v == NULL ? b != 7
		      : (b == 1) != (strcmp(v, "true") == 0 ||
				     strcmp(v, "1") == 0) ||
				(b == 0) != (strcmp(v, "false") == 0 ||
					     strcmp(v, "0") == 0) ||
				(b != 0 && b != 1 && b != -1))
		abort();
}

static void fz_check_body(const uint8_t *d, size_t n)
{
	req_ctx rc = {0};
	size_t max = 1 + (n > 0 ? d[0] : 0) * 4u, fed = 0;
	const uint8_t *whole = d + (n > 0), *p = whole;
	size_t left = n - (n > 0);
	while (left > 0) {
		size_t len = 1 + p[0] % 64;
		if (len > left)
			len = left;
		take_chunk(&rc, (const char *)p, len, max);
		fed += len;
		p += len;
		left -= len;
		if (rc.too_large != (fed > max) || rc.oom)
			abort();
		if (!rc.too_large &&
		    (rc.len != fed || memcmp(rc.body, whole, fed) != 0 ||
		     rc.body[rc.len] != '\0'))
			abort();
		if (rc.too_large && (rc.body != NULL || rc.len != 0))
			abort();
	}
	free(rc.body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0 || size > 4096)
		return 0;
	if (data[0] == 1) {
		fz_check_body(data + 1, size - 1);
		return 0;
	}
	/* A request target as the C string libmicrohttpd hands over. */
	char *url = malloc(size);
	if (url == NULL)
		return 0;
	memcpy(url, data + 1, size - 1);
	url[size - 1] = '\0';
	char *q = strchr(url, '?');
	if (q != NULL)
		*q++ = '\0';
	MHD_http_unescape(url);
	fz_check_route(url);
	if (q != NULL)
		fz_check_query(q);
	free(url);
	return 0;
}
