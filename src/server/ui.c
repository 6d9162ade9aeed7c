/* The web console's files, served from the daemon's own memory (the
 * bytes are compiled in from ui/ by scripts/embed-ui.sh): nothing to
 * install or find at run time, and nothing outside the table is ever
 * served — a name is looked up, never joined to a path. */
#include <stddef.h>
#include <string.h>

#include "server/http.h"
#include "server/ui.h"

typedef struct al_ui_asset {
	const char *name;
	const unsigned char *data;
	size_t len;
} al_ui_asset;

#include "ui_assets.inc"

#define N_ASSETS (sizeof(ui_assets) / sizeof(ui_assets[0]))

/* Scripts and styles from these files only (no inline script, no eval),
 * data from this origin's API only, never framed. */
static const char csp[] =
	"default-src 'self'; script-src 'self'; style-src 'self'; "
	"img-src 'self'; connect-src 'self'; object-src 'none'; "
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

bool al_ui_route(const char *url)
{
	return strcmp(url, "/ui") == 0 || strncmp(url, "/ui/", 4) == 0;
}

static const char *content_type(const char *name)
{
	static const struct {
		const char *ext, *type;
	} types[] = {
		{".html", "text/html; charset=utf-8"},
		{".css", "text/css; charset=utf-8"},
		{".js", "text/javascript; charset=utf-8"},
		{".svg", "image/svg+xml"},
		{".png", "image/png"},
	};
	const char *dot = strrchr(name, '.');
	for (size_t i = 0; dot != NULL && i < sizeof(types) / sizeof(types[0]);
	     i++)
		if (strcmp(dot, types[i].ext) == 0)
			return types[i].type;
	return "application/octet-stream";
}

static void security_headers(struct MHD_Response *resp)
{
	MHD_add_response_header(resp, "Content-Security-Policy", csp);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(resp, "Cross-Origin-Opener-Policy",
				"same-origin");
	/* Revalidated on every load: an upgraded daemon's console is never
	 * mixed with a cached older script. */
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-cache");
}

static enum MHD_Result queue(al_service *svc, struct MHD_Connection *conn,
			     unsigned status, struct MHD_Response *resp,
			     size_t len)
{
	if (resp == NULL)
		return MHD_NO;
	security_headers(resp);
	al_http_answer(resp, status, len, false);
	enum MHD_Result ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	al_srv_metrics_http(svc->metrics, status);
	return ret;
}

enum MHD_Result al_ui_answer(al_service *svc, struct MHD_Connection *conn,
			     const char *url)
{
	if (strcmp(url, "/ui") == 0) {
		struct MHD_Response *resp = MHD_create_response_from_buffer(
			0, NULL, MHD_RESPMEM_PERSISTENT);
		if (resp != NULL)
			MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION,
						"/ui/");
		return queue(svc, conn, 308, resp, 0);
	}
	const char *name = url + 4;
	if (*name == '\0')
		name = "index.html";
	for (size_t i = 0; i < N_ASSETS; i++) {
		if (strcmp(ui_assets[i].name, name) != 0)
			continue;
		/* PERSISTENT: the bytes are static; libmicrohttpd never
		 * writes to them. */
		struct MHD_Response *resp = MHD_create_response_from_buffer(
			ui_assets[i].len, (void *)ui_assets[i].data,
			MHD_RESPMEM_PERSISTENT);
		if (resp != NULL)
			MHD_add_response_header(resp,
						MHD_HTTP_HEADER_CONTENT_TYPE,
						content_type(name));
		return queue(svc, conn, 200, resp, ui_assets[i].len);
	}
	return al_http_error(svc, conn, 404, "not_found", "no such file");
}
