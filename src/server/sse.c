/* GET /v1/runs/{id}/events: server-sent events.  A subscriber gets the
 * run's buffered output from the start (or after Last-Event-ID), then live
 * output, then one `result` event, and the stream ends.  The result event
 * has an id too: a client that reconnects after it (as EventSource does
 * whenever a stream ends) is answered 204, which tells it to stop. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <airlock/json.h>

#include "core/util.h"
#include "json/base64.h"
#include "server/http.h"
#include "supervisor/outlog.h"

#define KEEPALIVE_S 15

typedef struct sse {
	al_service *svc;
	al_srv_run *run;
	uint64_t next; /* seq of the next event to send */
	char *pend;    /* formatted bytes not yet handed to MHD */
	size_t pend_len, pend_off;
	bool finished; /* the result event is formatted */
	/* A result on disk: opened once its event's head is sent, streamed
	 * from the descriptor, then the event's end. */
	enum { F_NONE, F_OPEN, F_STREAM } file;
	int fd;
} sse;

/* "event: NAME\nid: SEQ\ndata: JSON\n\n" with {"data": text} for UTF-8
 * and {"data_b64": ...} otherwise. */
char *al_sse_format_output(uint64_t seq, int stream, const unsigned char *d,
			   size_t len)
{
	json_t *o = NULL;
	char *data = NULL, *out = NULL, *b64 = NULL;
	if (stream == AL_OUTLOG_EVENT)
		/* a toolbelt event: its JSON as the supervisor wrote it */
		return al_strdup_printf("event: event\nid: %llu\ndata: %.*s\n\n",
					(unsigned long long)seq, (int)len,
					(const char *)d);
	if (al_utf8_valid(d, len)) {
		o = json_pack("{s:s%}", "data", (const char *)d, len);
	} else {
		b64 = al_base64_encode(d, len);
		if (b64 != NULL)
			o = json_pack("{s:s}", "data_b64", b64);
	}
	if (o != NULL && (data = json_dumps(o, JSON_COMPACT)) != NULL)
		out = al_strdup_printf(
			"event: %s\nid: %llu\ndata: %s\n\n",
			stream == AL_STDOUT ? "stdout" : "stderr",
			(unsigned long long)seq, data);
	free(data);
	free(b64);
	json_decref(o);
	return out;
}

/* Lock held by the caller; fills s->pend with the next thing to send.
 * Returns false when the stream must end now. */
static bool next_chunk_locked(sse *s)
{
	al_srv_run *run = s->run;
	al_service *svc = s->svc;
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += KEEPALIVE_S;

	if (s->next > run->next_seq)
		s->next = run->next_seq; /* a Last-Event-ID from the future */
	for (;;) {
		uint64_t first = run->next_seq - run->n_events;
		if (s->next < first) {
			/* The buffer bound dropped events this subscriber
			 * never saw: say so, then carry on. */
			s->pend = al_strdup_printf(
				"event: dropped\ndata: {\"events\":%llu}\n\n",
				(unsigned long long)(first - s->next));
			s->next = first;
			return s->pend != NULL;
		}
		if (s->next < run->next_seq) {
			const al_srv_event *ev = &run->events[s->next - first];
			s->pend = al_sse_format_output(ev->seq, ev->stream, ev->data,
						ev->len);
			s->next++;
			return s->pend != NULL;
		}
		if (run->state == AL_SRV_RUN_DONE) {
			if (run->result_json != NULL) {
				s->pend = al_strdup_printf(
					"event: result\nid: %llu\ndata: %s\n\n",
					(unsigned long long)run->next_seq,
					run->result_json);
			} else {
				s->pend = al_strdup_printf(
					"event: result\nid: %llu\ndata: ",
					(unsigned long long)run->next_seq);
				s->file = F_OPEN;
			}
			s->finished = true;
			return s->pend != NULL;
		}
		if (svc->closing)
			return false;
		if (pthread_cond_timedwait(&run->changed, &svc->lock,
					   &deadline) == ETIMEDOUT) {
			/* A comment line: keeps proxies open and finds
			 * clients that went away. */
			s->pend = strdup(": keepalive\n\n");
			return s->pend != NULL;
		}
	}
}

/* The stored result after "data: " (compact JSON: one line), then the
 * event's end.  false when it cannot be read. */
static bool open_result(sse *s)
{
	al_srv_stored st;
	s->file = F_NONE;
	/* The route checked the run's ownership; tenant and id are fixed. */
	if (al_service_stored_result(s->svc, s->run->tenant, s->run->run_id,
				     s->run, &st) < 0)
		return false;
	if (st.fd >= 0) {
		s->fd = st.fd;
		st.fd = -1;
		s->file = F_STREAM;
	} else {
		s->pend = al_strdup_printf("%s\n\n", st.text);
	}
	al_srv_stored_clear(&st);
	return s->file == F_STREAM || s->pend != NULL;
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	sse *s = cls;
	(void)pos;
	while (s->pend_off >= s->pend_len) {
		free(s->pend);
		s->pend = NULL;
		s->pend_off = s->pend_len = 0;
		if (s->file == F_OPEN && !open_result(s))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (s->file == F_STREAM) {
			ssize_t n;
			do
				n = read(s->fd, buf, max);
			while (n < 0 && errno == EINTR);
			if (n > 0)
				return n;
			close(s->fd);
			s->fd = -1;
			s->file = F_NONE;
			if (n < 0 || (s->pend = strdup("\n\n")) == NULL)
				return MHD_CONTENT_READER_END_WITH_ERROR;
		} else if (s->pend == NULL) {
			if (s->finished)
				return MHD_CONTENT_READER_END_OF_STREAM;
			pthread_mutex_lock(&s->svc->lock);
			bool more = next_chunk_locked(s);
			pthread_mutex_unlock(&s->svc->lock);
			if (!more)
				return s->finished
					       ? MHD_CONTENT_READER_END_OF_STREAM
					       : MHD_CONTENT_READER_END_WITH_ERROR;
		}
		s->pend_len = strlen(s->pend);
	}
	size_t n = s->pend_len - s->pend_off;
	if (n > max)
		n = max;
	memcpy(buf, s->pend + s->pend_off, n);
	s->pend_off += n;
	return (ssize_t)n;
}

static void sse_free(void *cls)
{
	sse *s = cls;
	al_service_run_put(s->svc, s->run);
	if (s->fd >= 0)
		close(s->fd);
	free(s->pend);
	free(s);
}

static enum MHD_Result no_content(al_service *svc,
				  struct MHD_Connection *conn)
{
	struct MHD_Response *resp =
		MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	if (resp == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-store");
	al_http_answer(resp, 204, 0, false);
	enum MHD_Result ret = MHD_queue_response(conn, 204, resp);
	MHD_destroy_response(resp);
	al_srv_metrics_http(svc->metrics, 204);
	return ret;
}

enum MHD_Result al_http_events(al_service *svc, struct MHD_Connection *conn,
			       al_srv_run *run)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	sse *s = calloc(1, sizeof(*s));
	if (s == NULL) {
		al_service_run_put(svc, run);
		return MHD_NO;
	}
	s->svc = svc;
	s->run = run;
	s->fd = -1;
	/* A reconnecting client resumes after the last event it saw. */
	const char *last = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
						       "Last-Event-ID");
	if (last != NULL && last[0] != '\0') {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(last, &end, 10);
		if (errno != 0 || last[0] < '0' || last[0] > '9' ||
		    *end != '\0' || v == UINT64_MAX) {
			sse_free(s);
			return al_http_error(svc, conn, 400, "invalid_header",
					     "Last-Event-ID: expected an event "
					     "id of this stream");
		}
		s->next = v + 1;
		pthread_mutex_lock(&svc->lock);
		/* The result (id next_seq) was delivered: nothing more. */
		bool over = run->state == AL_SRV_RUN_DONE && v >= run->next_seq;
		pthread_mutex_unlock(&svc->lock);
		if (over) {
			sse_free(s);
			return no_content(svc, conn);
		}
	}
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024,
						 sse_read, s, sse_free);
	if (resp == NULL) {
		sse_free(s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				"text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				"no-store");
	al_http_answer(resp, 200, 0, true);
	ret = MHD_queue_response(conn, 200, resp);
	MHD_destroy_response(resp);
	al_srv_metrics_http(svc->metrics, 200);
	return ret;
}
