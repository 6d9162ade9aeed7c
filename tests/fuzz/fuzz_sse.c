/* libFuzzer target: Last-Event-ID on GET /v1/runs/{id}/events
 * (src/server/sse.c), through a real libmicrohttpd daemon on loopback,
 * started once, whose handler is al_http_events for one finished run with
 * a buffer of events 10..19 (0..9 were dropped by the buffer bound).
 *
 * The input is the header's value (printable ASCII).  For every value
 * the answer is 200 (or 204 to a reconnecting client of a finished run), and a 200 stream ends with
 * one `result` event after ids that rise by one.  For a value that is a
 * decimal number N of 64 bits, every event sent has an id above N, and
 * a `dropped` event says how many the client missed when N + 1 is older
 * than the buffer. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "fuzz_net.h"
#include "server/http.h"
#include "server/service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FIRST 10u
#define NEXT 20u

static al_service svc;
static al_srv_run *run;
static struct MHD_Daemon *mhd;
static uint16_t port;
static int marker;

static enum MHD_Result handler(void *cls, struct MHD_Connection *conn,
			       const char *url, const char *method,
			       const char *version, const char *upload,
			       size_t *upload_size, void **con_cls)
{
	(void)cls, (void)url, (void)method, (void)version, (void)upload;
	(void)upload_size;
	if (*con_cls == NULL) {
		*con_cls = &marker;
		return MHD_YES;
	}
	/* al_http_events takes over a reference */
	pthread_mutex_lock(&svc.lock);
	run->refs++;
	pthread_mutex_unlock(&svc.lock);
	return al_http_events(&svc, conn, run);
}

static void setup(void)
{
	al_server_options opts = {.state_dir = "/nonexistent"};
	if (al_service_init(&svc, &opts) < 0)
		abort();
	run = calloc(1, sizeof(*run));
	if (run == NULL)
		abort();
	run->svc = &svc;
	run->refs = 1; /* this target's, never dropped */
	snprintf(run->run_id, sizeof(run->run_id), "run-1");
	pthread_cond_init(&run->changed, NULL);
	run->state = AL_SRV_RUN_DONE;
	run->status = 200;
	run->result_json = strdup("{\"outcome\":\"completed\"}");
	run->events = calloc(NEXT - FIRST, sizeof(*run->events));
	if (run->result_json == NULL || run->events == NULL)
		abort();
	for (unsigned i = 0; i < NEXT - FIRST; i++) {
		al_srv_event *ev = &run->events[i];
		ev->seq = FIRST + i;
		ev->stream = i % 2 ? AL_STDERR : AL_STDOUT;
		ev->data = malloc(8);
		if (ev->data == NULL)
			abort();
		/* one event that is not UTF-8 (sent as data_b64) */
		ev->len = (size_t)snprintf((char *)ev->data, 8, "%s%u",
					   i == 3 ? "\xff" : "o", i);
	}
	run->n_events = NEXT - FIRST;
	run->next_seq = NEXT;
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
				       MHD_USE_THREAD_PER_CONNECTION |
				       MHD_USE_ITC,
			       0, NULL, NULL, handler, NULL,
			       MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_END);
	port = fuzz_mhd_port(mhd);
}

/* The whole answer to one request; aborts if it does not end. */
static char *fetch(const char *value, size_t *len)
{
	int fd = fuzz_connect(port);
	char req[256];
	int n = snprintf(req, sizeof(req),
			 "GET /v1/runs/run-1/events HTTP/1.0\r\n"
			 "Host: x\r\nLast-Event-ID: %s\r\n\r\n",
			 value);
	if (n < 0 || write(fd, req, (size_t)n) != n)
		abort();
	int err;
	char *buf = fuzz_read_all(fd, len, &err);
	if (err != 0) {
		fprintf(stderr, "the stream did not end: %s\n", strerror(err));
		abort();
	}
	return buf;
}

/* A decimal number of 64 bits: *v. */
static bool decimal(const char *s, uint64_t *v)
{
	size_t n = strlen(s);
	if (n == 0 || strspn(s, "0123456789") != n)
		return false;
	/* leading zeros do not make a number larger */
	while (n > 1 && *s == '0') {
		s++;
		n--;
	}
	if (n > 20 || (n == 20 && strcmp(s, "18446744073709551615") > 0))
		return false;
	*v = strtoull(s, NULL, 10);
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char value[65], trimmed[65];
	size_t k = 0;
	if (mhd == NULL)
		setup();
	for (size_t i = 0; i < size && k < sizeof(value) - 1; i++)
		if (data[i] >= 0x20 && data[i] < 0x7f)
			value[k++] = (char)data[i];
	value[k] = '\0';
	/* Blanks before the value are not part of it; blanks after it
	 * (libmicrohttpd keeps them) make it no number. */
	const char *b = value + strspn(value, " \t");
	size_t tl = strlen(b);
	memcpy(trimmed, b, tl + 1);

	size_t len;
	char *resp = fetch(value, &len);
	unsigned status = 0;
	char *body = strstr(resp, "\r\n\r\n");
	if (sscanf(resp, "HTTP/1.%*u %u", &status) != 1 || body == NULL) {
		fprintf(stderr, "not an HTTP answer: %s\n", resp);
		abort();
	}
	*body = '\0';
	body += 4;
	if (strstr(resp, "chunked") != NULL)
		abort(); /* HTTP/1.0: the stream ends with the connection */
	/* A present value must be an event id (a decimal below 2^64-1):
	 * else 400; at or past the result's id (NEXT) the stream is over:
	 * 204; otherwise the stream resumes after it. */
	uint64_t v = 0;
	bool number = decimal(trimmed, &v) && v != UINT64_MAX;
	unsigned want = tl == 0 ? 200 : !number ? 400 : v >= NEXT ? 204 : 200;
	if (status != want) {
		fprintf(stderr, "status %u (want %u) for Last-Event-ID '%s'\n",
			status, want, value);
		abort();
	}
	if (status == 400 && strstr(body, "\"invalid_header\"") == NULL)
		abort();
	if (status != 200) {
		if (status == 204 && *body != '\0')
			abort();
		free(resp);
		return 0;
	}
	/* The events: ids that rise by one, then exactly one result. */
	uint64_t prev = 0, dropped = 0, n_ids = 0;
	bool have_prev = false, result = false;
	for (char *save = NULL, *ev = strtok_r(body, "\n", &save); ev;
	     ev = strtok_r(NULL, "\n", &save)) {
		unsigned long long x;
		if (result) {
			fprintf(stderr, "data after the result: %s\n", ev);
			abort();
		}
		if (strcmp(ev, "event: result") == 0) {
			result = true;
			/* the result's own id, one past the last event's */
			ev = strtok_r(NULL, "\n", &save);
			if (ev == NULL || sscanf(ev, "id: %llu", &x) != 1 ||
			    x != NEXT)
				abort();
			ev = strtok_r(NULL, "\n", &save);
			if (ev == NULL ||
			    strcmp(ev, "data: {\"outcome\":\"completed\"}") != 0)
				abort();
		} else if (sscanf(ev, "data: {\"events\":%llu}", &x) == 1) {
			dropped = x;
		} else if (sscanf(ev, "id: %llu", &x) == 1) {
			if ((have_prev && x != prev + 1) || x < FIRST ||
			    x >= NEXT)
				abort();
			prev = x;
			have_prev = true;
			n_ids++;
		}
	}
	if (!result) {
		fprintf(stderr, "no result event for '%s'\n", value);
		abort();
	}
	if (have_prev && prev != NEXT - 1)
		abort();
	if (tl > 0) {
		uint64_t from = v + 1;
		uint64_t want_drop = from < FIRST ? FIRST - from : 0;
		uint64_t want_ids = NEXT - (from < FIRST ? FIRST : from);
		if (dropped != want_drop || n_ids != want_ids) {
			fprintf(stderr,
				"Last-Event-ID %s: %llu ids, %llu dropped; "
				"want %llu and %llu\n",
				trimmed, (unsigned long long)n_ids,
				(unsigned long long)dropped,
				(unsigned long long)want_ids,
				(unsigned long long)want_drop);
			abort();
		}
	}
	free(resp);
	return 0;
}
