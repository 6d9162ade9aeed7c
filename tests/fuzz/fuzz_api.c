/* libFuzzer target: the HTTP front as a client meets it — raw bytes on a
 * connection to a libmicrohttpd daemon (the daemon's own flags) whose
 * handler is al_http_handle over a real service: a configuration, the
 * token table, a host with its audit database, the run table.  Started
 * once.  Execution is disabled, so a run request is admitted, audited and
 * refused without a supervisor; the run table, its ids (a client may
 * choose one with X-Airlock-Run-Id), the run routes, SSE and the body
 * bounds (16 KiB here) are all reachable.  The token is "fuzz-token".
 *
 * The input is sent as it is, the connection half-closed, the answer read
 * to its end.  Checked: the answer ends (no hang); it starts with an
 * HTTP status line; when the first answer is JSON with a length, it parses,
 * and an error (status >= 400) is typed: {"error", "message", "status"}
 * with the status of the answer. */
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include <airlock/json.h>

#include "fuzz_net.h"
#include "host/config.h"
#include "server/http.h"
#include "server/service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT (64u * 1024u)

static al_service svc;
static al_http http = {.svc = &svc, .max_connections = 64};
static struct MHD_Daemon *mhd;
static uint16_t port;
static char dir[] = "/tmp/airlock-fuzz-api-XXXXXX";

static int remove_one(const char *path, const struct stat *st, int flag,
		      struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

/* The state directory goes with the process. */
static void cleanup(void)
{
	if (mhd != NULL)
		MHD_stop_daemon(mhd);
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void setup(void)
{
	char hash[65], *text = NULL;
	al_error *err = NULL;
	al_srv_gen *gen = calloc(1, sizeof(*gen));
	if (gen == NULL || mkdtemp(dir) == NULL)
		abort();
	al_sha256_hex("fuzz-token", strlen("fuzz-token"), hash);
	if (asprintf(&text,
		     "{\"execution_enabled\": false,"
		     " \"providers\": [\"disabled\"],"
		     " \"tenants\": {\"default\": {\"languages\": \"*\"},"
		     "  \"other\": {\"languages\": [\"sh\"]}},"
		     " \"tokens\": {\"%s\": \"default\"},"
		     " \"audit\": {\"finished_synchronous\": \"normal\"}}",
		     hash) < 0)
		abort();
	al_server_options opts = {.state_dir = dir,
				  .max_body_bytes = 16 * 1024,
				  .max_connections = 64};
	al_host_options ho = {.state_dir = dir};
	if (al_config_parse(text, strlen(text), &gen->cfg, &err) < 0 ||
	    al_auth_from_config(text, strlen(text), gen->cfg, &gen->auth,
				&err) < 0 ||
	    al_host_new(gen->cfg, &ho, &gen->host, &err) < 0 ||
	    al_service_init(&svc, &opts) < 0) {
		fprintf(stderr, "fuzz_api: setup: %s\n",
			al_error_get_message(err));
		abort();
	}
	free(text);
	al_service_gen_set(&svc, gen);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	mhd = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD |
			MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC,
		0, NULL, NULL, al_http_handle, &http, MHD_OPTION_SOCK_ADDR, &sa,
		MHD_OPTION_CONNECTION_LIMIT, 64u,
		MHD_OPTION_CONNECTION_TIMEOUT, 5u,
		MHD_OPTION_NOTIFY_COMPLETED, al_http_completed, &http,
		MHD_OPTION_END);
	port = fuzz_mhd_port(mhd);
	atexit(cleanup);
}

/* Sends the input, half-closes, reads the answer to its end. */
static char *exchange(const uint8_t *data, size_t size, size_t *len)
{
	int fd = fuzz_connect(port);
	for (size_t off = 0; off < size;) {
		ssize_t w = send(fd, data + off, size - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break; /* answered and closed before the end: fine */
		off += (size_t)w;
	}
	shutdown(fd, SHUT_WR);
	int err;
	char *buf = fuzz_read_all(fd, len, &err);
	if (err == EAGAIN || err == EWOULDBLOCK) {
		fprintf(stderr, "fuzz_api: no end to the answer\n");
		abort();
	}
	return buf; /* a reset by the daemon ends it too */
}

/* The value of header name in the head [h, end), or NULL. */
static const char *header(const char *h, const char *end, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = h; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			break;
		if ((size_t)(nl - p) > n + 1 && strncasecmp(p, name, n) == 0 &&
		    p[n] == ':')
			return p + n + 1 + strspn(p + n + 1, " ");
		p = nl + 1;
	}
	return NULL;
}

static void check_first_answer(char *resp, size_t len)
{
	unsigned status;
	if (len == 0)
		return; /* closed without an answer (e.g. no request line) */
	if (sscanf(resp, "HTTP/1.%*1[01] %3u", &status) != 1) {
		fprintf(stderr, "fuzz_api: not a status line: %.80s\n", resp);
		abort();
	}
	char *end = strstr(resp, "\r\n\r\n");
	if (end == NULL)
		return; /* cut off by a reset; nothing more to judge */
	const char *ct = header(resp, end, "Content-Type");
	const char *cl = header(resp, end, "Content-Length");
	if (ct == NULL || strncmp(ct, "application/json", 16) != 0 ||
	    cl == NULL)
		return; /* libmicrohttpd's own answers, SSE, artifacts */
	size_t blen = strtoul(cl, NULL, 10);
	char *body = end + 4;
	if ((size_t)(resp + len - body) < blen)
		return; /* cut off */
	json_error_t jerr;
	json_t *o = json_loadb(body, blen, 0, &jerr);
	if (o == NULL) {
		fprintf(stderr, "fuzz_api: a JSON answer that is not JSON\n");
		abort();
	}
	if (status >= 400) {
		json_t *e = json_object_get(o, "error");
		json_t *m = json_object_get(o, "message");
		json_t *s = json_object_get(o, "status");
		/* A run's own result (e.g. 400 for an invalid request) has
		 * an outcome instead. */
		if (json_object_get(o, "outcome") == NULL &&
		    (!json_is_string(e) || !json_is_string(m) ||
		     json_integer_value(s) != (json_int_t)status)) {
			fprintf(stderr, "fuzz_api: untyped error %u: %.*s\n",
				status, (int)blen, body);
			abort();
		}
	}
	json_decref(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > MAX_INPUT)
		return 0;
	if (mhd == NULL)
		setup();
	size_t len;
	char *resp = exchange(data, size, &len);
	check_first_answer(resp, len);
	free(resp);
	return 0;
}
