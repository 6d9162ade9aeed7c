/* The daemon's log lines (core/log.h, docs/serve.md "Logs").  Each line is
 * built whole and written with one write(2) on stderr: threads and the
 * processes sharing the descriptor never interleave inside a line.  With
 * the writer started (al_log_writer_start) a line is queued for its
 * thread instead, so a stderr nobody reads never blocks the caller. */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "core/log.h"
#include "core/util.h"

/* A field value is cut here: a line stays one write. */
#define VALUE_MAX 4096u

static const char *const level_names[] = {"error", "warn", "info", "debug"};

/* Set once before the threads start (serve's and supervise's main). */
static bool json_format;
static al_log_level max_level = AL_LOG_INFO;

static _Thread_local const char *ctx_request_id;
static _Thread_local const char *ctx_trace_id;

/* The writer: lines waiting for stderr, in order, at most queue_max bytes
 * of them; lines past that are counted and dropped. */
struct queued_line {
	struct queued_line *next;
	size_t len;
	char text[];
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t more, drained;
	struct queued_line *head, *tail;
	size_t bytes, queue_max;
	unsigned long long dropped;
	bool started, stopping, writing; /* started: not joined yet */
	pid_t owner; /* the process whose thread writes (0: none) */
	pthread_t thread;
} writer = {.mu = PTHREAD_MUTEX_INITIALIZER,
	    .more = PTHREAD_COND_INITIALIZER,
	    .drained = PTHREAD_COND_INITIALIZER};

int al_log_set_format(const char *name)
{
	if (name != NULL && strcmp(name, "text") == 0)
		json_format = false;
	else if (name != NULL && strcmp(name, "json") == 0)
		json_format = true;
	else
		return -EINVAL;
	return 0;
}

int al_log_set_level(const char *name)
{
	for (size_t i = 0; name != NULL && i < 4; i++)
		if (strcmp(name, level_names[i]) == 0) {
			max_level = (al_log_level)i;
			return 0;
		}
	return -EINVAL;
}

int al_log_from_env(const char **bad)
{
	const char *f = getenv("AIRLOCK_LOG_FORMAT");
	const char *l = getenv("AIRLOCK_LOG_LEVEL");
	if (f != NULL && f[0] != '\0' && al_log_set_format(f) < 0) {
		*bad = "AIRLOCK_LOG_FORMAT";
		return -EINVAL;
	}
	if (l != NULL && l[0] != '\0' && al_log_set_level(l) < 0) {
		*bad = "AIRLOCK_LOG_LEVEL";
		return -EINVAL;
	}
	return 0;
}

void al_log_export_env(void)
{
	setenv("AIRLOCK_LOG_FORMAT", json_format ? "json" : "text", 1);
	setenv("AIRLOCK_LOG_LEVEL", level_names[max_level], 1);
}

bool al_log_enabled(al_log_level level)
{
	return (level & AL_LOG_ALWAYS) != 0 || level <= max_level;
}

void al_log_context(const char *request_id, const char *trace_id)
{
	ctx_request_id = request_id;
	ctx_trace_id = trace_id;
}

static void timestamp(char out[32])
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t k = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + k, 32 - k, ".%03ldZ", ts.tv_nsec / 1000000);
}

/* logfmt: a value is quoted when it is empty or holds a space, '=', a
 * quote, a backslash or any byte outside printable ASCII. */
static bool needs_quote(const char *s)
{
	if (s[0] == '\0')
		return true;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f || *p == '=' || *p == '"' ||
		    *p == '\\')
			return true;
	return false;
}

static void text_pair(FILE *f, const char *key, const char *value)
{
	if (!needs_quote(value) && strlen(value) <= VALUE_MAX) {
		fprintf(f, " %s=%s", key, value);
		return;
	}
	char *q = al_log_quote(value, VALUE_MAX);
	fprintf(f, " %s=%s", key, q != NULL ? q : "\"\"");
	free(q);
}

static void text_line(FILE *f, const char *ts, al_log_level level,
		      const char *msg, const al_log_field *fields, size_t n)
{
	fprintf(f, "ts=%s level=%s", ts, level_names[level]);
	text_pair(f, "msg", msg);
	for (size_t i = 0; i < n; i++) {
		if (fields[i].is_num)
			fprintf(f, " %s=%lld", fields[i].key, fields[i].num);
		else if (fields[i].str != NULL)
			text_pair(f, fields[i].key, fields[i].str);
	}
	if (ctx_request_id != NULL)
		text_pair(f, "request_id", ctx_request_id);
	if (ctx_trace_id != NULL)
		text_pair(f, "trace_id", ctx_trace_id);
}

/* A JSON string of any bytes: invalid UTF-8 is escaped as \xNN text. */
static json_t *jvalue(const char *s)
{
	json_t *v = strlen(s) <= VALUE_MAX ? json_string(s) : NULL;
	if (v == NULL) {
		char *q = al_log_quote(s, VALUE_MAX);
		v = q != NULL ? json_stringn(q + 1, strlen(q) - 2) : NULL;
		free(q);
	}
	return v;
}

static char *json_line(const char *ts, al_log_level level, const char *msg,
		       const al_log_field *fields, size_t n)
{
	json_t *o = json_object();
	if (o == NULL)
		return NULL;
	json_object_set_new(o, "ts", json_string(ts));
	json_object_set_new(o, "level", json_string(level_names[level]));
	json_object_set_new(o, "msg", jvalue(msg));
	for (size_t i = 0; i < n; i++) {
		if (fields[i].is_num)
			json_object_set_new(o, fields[i].key,
					    json_integer(fields[i].num));
		else if (fields[i].str != NULL)
			json_object_set_new(o, fields[i].key,
					    jvalue(fields[i].str));
	}
	if (ctx_request_id != NULL)
		json_object_set_new(o, "request_id", jvalue(ctx_request_id));
	if (ctx_trace_id != NULL)
		json_object_set_new(o, "trace_id", jvalue(ctx_trace_id));
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return s;
}

/* Queues a copy of the line for the writer: false when this process has
 * no writer (not started, stopped, or a child of the process that has
 * one), and the caller writes it itself. */
static bool enqueue(const char *line, size_t len)
{
	if (__atomic_load_n(&writer.owner, __ATOMIC_ACQUIRE) != getpid())
		return false;
	struct queued_line *q = malloc(sizeof(*q) + len);
	pthread_mutex_lock(&writer.mu);
	bool mine = writer.owner == getpid() && !writer.stopping;
	if (mine && (q == NULL || writer.bytes + len > writer.queue_max)) {
		writer.dropped++;
	} else if (mine) {
		memcpy(q->text, line, len);
		q->len = len;
		q->next = NULL;
		if (writer.tail != NULL)
			writer.tail->next = q;
		else
			writer.head = q;
		writer.tail = q;
		writer.bytes += len;
		q = NULL;
		pthread_cond_signal(&writer.more);
	}
	pthread_mutex_unlock(&writer.mu);
	free(q);
	return mine;
}

/* The line that says how many were dropped, in the log's format. */
static void write_dropped(unsigned long long n)
{
	char msg[96];
	snprintf(msg, sizeof(msg),
		 "%llu log line(s) dropped: stderr was not read fast enough",
		 n);
	char ts[32];
	timestamp(ts);
	char *line = NULL;
	if (json_format) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:I}", "ts", ts, "level",
				      "warn", "msg", msg, "dropped",
				      (json_int_t)n);
		char *text = o != NULL ? json_dumps(o, JSON_COMPACT |
							  JSON_PRESERVE_ORDER)
				       : NULL;
		json_decref(o);
		line = text != NULL ? al_strdup_printf("%s\n", text) : NULL;
		free(text);
	} else {
		line = al_strdup_printf("ts=%s level=warn msg=\"%s\" dropped=%llu\n",
					ts, msg, n);
	}
	if (line != NULL)
		(void)al_write_all(2, line, strlen(line));
	free(line);
}

static void *writer_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&writer.mu);
	for (;;) {
		while (writer.head == NULL && writer.dropped == 0 &&
		       !writer.stopping)
			pthread_cond_wait(&writer.more, &writer.mu);
		if (writer.head == NULL && writer.dropped == 0)
			break; /* stopping, all written */
		struct queued_line *batch = writer.head;
		unsigned long long dropped = writer.dropped;
		writer.head = writer.tail = NULL;
		writer.bytes = 0;
		writer.dropped = 0;
		writer.writing = true;
		pthread_mutex_unlock(&writer.mu);
		while (batch != NULL) {
			struct queued_line *next = batch->next;
			(void)al_write_all(2, batch->text, batch->len);
			free(batch);
			batch = next;
		}
		/* After the lines queued before the drops, in their place. */
		if (dropped > 0)
			write_dropped(dropped);
		pthread_mutex_lock(&writer.mu);
		writer.writing = false;
		pthread_cond_broadcast(&writer.drained);
	}
	pthread_mutex_unlock(&writer.mu);
	return NULL;
}

int al_log_writer_start(size_t queue_max)
{
	pthread_mutex_lock(&writer.mu);
	int rc = writer.started ? -EALREADY : 0;
	if (rc == 0) {
		writer.queue_max = queue_max;
		writer.stopping = false;
		rc = -pthread_create(&writer.thread, NULL, writer_main, NULL);
	}
	if (rc == 0) {
		writer.started = true;
		__atomic_store_n(&writer.owner, getpid(), __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&writer.mu);
	return rc;
}

/* Waits, under writer.mu, at most wait_ms for what is queued to be
 * written: true when it was. */
static bool drained_locked(unsigned wait_ms)
{
	struct timespec dl;
	al_deadline(CLOCK_REALTIME, &dl, wait_ms);
	int r = 0;
	while ((writer.head != NULL || writer.dropped > 0 || writer.writing) &&
	       r != ETIMEDOUT)
		r = pthread_cond_timedwait(&writer.drained, &writer.mu, &dl);
	return writer.head == NULL && writer.dropped == 0 && !writer.writing;
}

bool al_log_flush(unsigned wait_ms)
{
	if (__atomic_load_n(&writer.owner, __ATOMIC_ACQUIRE) != getpid())
		return true;
	pthread_mutex_lock(&writer.mu);
	bool done = drained_locked(wait_ms);
	pthread_mutex_unlock(&writer.mu);
	return done;
}

bool al_log_writer_stop(unsigned wait_ms)
{
	pthread_mutex_lock(&writer.mu);
	if (!writer.started || writer.owner != getpid()) {
		bool none = !writer.started;
		pthread_mutex_unlock(&writer.mu);
		return none;
	}
	/* Lines from here on are written by their callers. */
	writer.stopping = true;
	pthread_cond_signal(&writer.more);
	bool done = drained_locked(wait_ms);
	if (done) {
		writer.started = false;
		__atomic_store_n(&writer.owner, 0, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&writer.mu);
	/* Not done: the writer is blocked on stderr with what it holds; a
	 * later call joins it once it is through, else the exit ends it. */
	if (done)
		pthread_join(writer.thread, NULL);
	return done;
}

void al_log_fields(al_log_level level, const char *msg,
		   const al_log_field *fields, size_t n)
{
	if (!al_log_enabled(level))
		return;
	level &= ~AL_LOG_ALWAYS;
	char ts[32];
	timestamp(ts);
	char *buf = NULL;
	size_t len = 0;
	if (json_format) {
		buf = json_line(ts, level, msg, fields, n);
		len = buf != NULL ? strlen(buf) : 0;
	} else {
		FILE *f = open_memstream(&buf, &len);
		if (f != NULL) {
			text_line(f, ts, level, msg, fields, n);
			if (fclose(f) != 0) {
				free(buf);
				buf = NULL;
			}
		}
	}
	if (buf == NULL) {
		/* Out of memory: the line is lost, not the process. */
		static const char oom[] = "level=error msg=\"log line lost: "
					  "out of memory\"\n";
		(void)!write(2, oom, sizeof(oom) - 1);
		return;
	}
	char *line = realloc(buf, len + 1);
	if (line == NULL) {
		free(buf);
		return;
	}
	line[len++] = '\n';
	if (!enqueue(line, len))
		(void)al_write_all(2, line, len);
	free(line);
}

void al_logf(al_log_level level, const char *run_id, const char *fmt, ...)
{
	if (!al_log_enabled(level))
		return;
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (r < 0)
		msg = NULL;
	al_log_field f = AL_LF_S("run_id", run_id);
	al_log_fields(level, msg != NULL ? msg : fmt, &f, 1);
	free(msg);
}
