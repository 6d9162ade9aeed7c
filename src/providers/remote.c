/* The `remote` provider: posts the exact request to another airlockd and
 * maps its typed result back unchanged.
 *
 * Config: {"url": "http://127.0.0.1:7878", "token_file": PATH | "token":
 * TOKEN, "timeout_ms": N}.  A run is submitted with ?wait=false, then its
 * event stream is followed (live output goes to the sink; the `result`
 * event ends it) while the cancel token is watched: when it fires, the
 * remote run is interrupted.  Transport failures answer `unavailable` with
 * remote_unreachable / remote_protocol_error / remote_unauthorized; nothing
 * is retried. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include <airlock/json.h>

#include "core/run_registry.h"
#include "core/util.h"
#include "json/base64.h"
#include "providers/curl_lib.h"
#include "providers/remote.h"
#include "supervisor/outlog.h"
#include "tool/proto.h"

#define DEFAULT_TIMEOUT_MS 10000L
#define MAX_BODY_BYTES (64u * 1024u * 1024u) /* a result is capped anyway */
#define MAX_TOKEN_BYTES 4096u
/* The remote sends a keep-alive comment every 15 s: a stream quiet for
 * this long is dead. */
#define STREAM_IDLE_S 60L
/* The caller's run id and the environment its host resolved for the run
 * (docs/api.md): headers, never the body. */
#define RUN_ID_HEADER "X-Airlock-Run-Id: "
#define FWD_HEADER "X-Airlock-Forwarded-Env: "

typedef struct remote_cfg {
	char *url; /* without a trailing slash */
	char *token;
	long timeout_ms;
} remote_cfg;

struct al_provider_handle {
	remote_cfg cfg;
	CURLSH *share;
	pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
	al_run_registry runs;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_ALL);
}

static void cfg_clear(remote_cfg *c)
{
	free(c->url);
	al_explicit_free_str(c->token);
	memset(c, 0, sizeof(*c));
}

static int bad_cfg(al_error **err, const char *key, const char *what)
{
	return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, key,
			    "remote provider config %s: %s", key, what);
}

static int read_token_file(const char *path, char **out, al_error **err)
{
	char buf[MAX_TOKEN_BYTES + 2];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return bad_cfg(err, "token_file", "cannot be opened");
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_mode & 077) != 0) {
		close(fd);
		return bad_cfg(err, "token_file",
			       "must be a regular file not readable by "
			       "others");
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return bad_cfg(err, "token_file", "cannot be read");
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	buf[n] = '\0';
	if (n == 0 || (size_t)n > MAX_TOKEN_BYTES || strchr(buf, '\n')) {
		explicit_bzero(buf, sizeof(buf));
		return bad_cfg(err, "token_file", "does not hold one token");
	}
	*out = strdup(buf);
	explicit_bzero(buf, sizeof(buf));
	return *out ? 0 : -ENOMEM;
}

static int parse_cfg(const char *config_json, remote_cfg *c, al_error **err)
{
	static const char *const known[] = {"url", "token", "token_file",
					    "timeout_ms", NULL};
	json_t *root = NULL, *v;
	const char *key;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	c->timeout_ms = DEFAULT_TIMEOUT_MS;
	if (config_json == NULL)
		return bad_cfg(err, "url", "missing");
	root = json_loads(config_json, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(root)) {
		rc = bad_cfg(err, "$", "expected an object");
		goto out;
	}
	json_object_foreach(root, key, v)
	{
		bool ok = false;
		for (size_t i = 0; known[i]; i++)
			ok = ok || strcmp(key, known[i]) == 0;
		if (!ok) {
			rc = bad_cfg(err, "?", "unknown key");
			goto out;
		}
	}
	const char *url = json_string_value(json_object_get(root, "url"));
	if (url == NULL || (strncmp(url, "http://", 7) != 0 &&
			    strncmp(url, "https://", 8) != 0)) {
		rc = bad_cfg(err, "url", "expected an http:// or https:// URL");
		goto out;
	}
	if ((c->url = strdup(url)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	size_t ul = strlen(c->url);
	while (ul > 0 && c->url[ul - 1] == '/')
		c->url[--ul] = '\0';
	json_t *tok = json_object_get(root, "token");
	json_t *tf = json_object_get(root, "token_file");
	if ((tok != NULL) == (tf != NULL)) {
		rc = bad_cfg(err, "token", "give exactly one of token and "
					   "token_file");
		goto out;
	}
	if (tok != NULL) {
		if (!json_is_string(tok) || json_string_length(tok) == 0 ||
		    json_string_length(tok) > MAX_TOKEN_BYTES ||
		    strpbrk(json_string_value(tok), "\r\n")) {
			rc = bad_cfg(err, "token", "expected a token string");
			goto out;
		}
		if ((c->token = strdup(json_string_value(tok))) == NULL)
			rc = -ENOMEM;
	} else if (!json_is_string(tf)) {
		rc = bad_cfg(err, "token_file", "expected a path");
	} else {
		rc = read_token_file(json_string_value(tf), &c->token, err);
	}
	if (rc < 0)
		goto out;
	if ((v = json_object_get(root, "timeout_ms")) != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > 3600000) {
			rc = bad_cfg(err, "timeout_ms",
				     "expected an integer from 1 to 3600000");
			goto out;
		}
		c->timeout_ms = (long)json_integer_value(v);
	}
out:
	json_decref(root);
	if (rc < 0)
		cfg_clear(c);
	return rc;
}

/* ---- HTTP ----------------------------------------------------------- */

typedef struct buf {
	char *data;
	size_t len;
	bool overflow;
} buf;

static size_t buf_write(char *p, size_t size, size_t n, void *ctx)
{
	buf *b = ctx;
	size_t len = size * n;
	if (b->len + len > MAX_BODY_BYTES) {
		b->overflow = true;
		return 0;
	}
	char *d = realloc(b->data, b->len + len + 1);
	if (d == NULL)
		return 0;
	memcpy(d + b->len, p, len);
	b->data = d;
	b->len += len;
	d[b->len] = '\0';
	return len;
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access a,
		       void *ctx)
{
	(void)h;
	(void)a;
	pthread_mutex_lock(&((al_provider_handle *)ctx)->share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ctx)
{
	(void)h;
	pthread_mutex_unlock(&((al_provider_handle *)ctx)->share_locks[data]);
}

/* Frees a header list, wiping every header first (the token, the
 * forwarded environment). */
static void slist_free_wiped(struct curl_slist *h)
{
	for (struct curl_slist *p = h; p != NULL; p = p->next)
		if (p->data != NULL)
			explicit_bzero(p->data, strlen(p->data));
	curl_slist_free_all(h);
}

/* An easy handle for url+path with the token and the extra headers
 * (NULL-terminated, may be NULL); NULL on failure.  *hdrs is to be freed
 * with slist_free_wiped. */
static CURL *easy_for(const remote_cfg *c, CURLSH *share, const char *path,
		      const char *const *extra, struct curl_slist **hdrs,
		      char **url_out)
{
	CURL *e = curl_easy_init();
	char *auth = al_strdup_printf("Authorization: Bearer %s", c->token);
	char *url = al_strdup_printf("%s%s", c->url, path);
	struct curl_slist *h = NULL, *h2;
	*hdrs = NULL;
	*url_out = NULL;
	if (e == NULL || auth == NULL || url == NULL)
		goto fail;
	if ((h2 = curl_slist_append(h, auth)) == NULL)
		goto fail;
	h = h2;
	if ((h2 = curl_slist_append(h, "Content-Type: application/json")) ==
	    NULL)
		goto fail;
	h = h2;
	/* The whole body is sent; no 100-continue round trip. */
	if ((h2 = curl_slist_append(h, "Expect:")) == NULL)
		goto fail;
	h = h2;
	for (size_t i = 0; extra != NULL && extra[i] != NULL; i++) {
		if ((h2 = curl_slist_append(h, extra[i])) == NULL)
			goto fail;
		h = h2;
	}
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	/* Forwarded secrets in plain text go straight to the loopback host
	 * the URL names (secrets_transport_ok), never through a proxy. */
	for (size_t i = 0; extra != NULL && extra[i] != NULL; i++)
		if (strncmp(extra[i], FWD_HEADER, strlen(FWD_HEADER)) == 0 &&
		    strncmp(c->url, "http://", 7) == 0)
			curl_easy_setopt(e, CURLOPT_PROXY, "");
	if (share != NULL)
		curl_easy_setopt(e, CURLOPT_SHARE, share);
	al_explicit_free_str(auth);
	*hdrs = h;
	*url_out = url;
	return e;
fail:
	slist_free_wiped(h);
	al_explicit_free_str(auth);
	free(url);
	if (e != NULL)
		curl_easy_cleanup(e);
	return NULL;
}

/* One request/response.  Returns 0 with *status and *body, or a negative
 * errno (transport failure) with *why set to a reason token. */
static int http_call(const remote_cfg *c, CURLSH *share, const char *method,
		     const char *path, const char *body,
		     const char *const *extra, long *status, buf *out,
		     const char **why)
{
	struct curl_slist *hdrs = NULL;
	char *url = NULL;
	CURL *e = easy_for(c, share, path, extra, &hdrs, &url);
	int rc = 0;
	*why = "remote_unreachable";
	*status = 0;
	if (e == NULL)
		return -ENOMEM;
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	if (body != NULL) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)strlen(body));
	}
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, c->timeout_ms);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, buf_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
	CURLcode cc = curl_easy_perform(e);
	if (cc != CURLE_OK) {
		rc = -EIO;
		if (out->overflow || cc == CURLE_WEIRD_SERVER_REPLY ||
		    cc == CURLE_RECV_ERROR)
			*why = "remote_protocol_error";
	} else {
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
	}
	slist_free_wiped(hdrs);
	free(url);
	curl_easy_cleanup(e);
	return rc;
}

/* ---- probe ----------------------------------------------------------- */

static int unavailable_facts(const char *why, al_facts **out)
{
	al_facts *f = al_facts_new("remote", AL_SAFETY_REMOTE);
	if (f == NULL || (f->unavailable_reason = strdup(why)) == NULL) {
		al_facts_free(f);
		return -ENOMEM;
	}
	f->available = false;
	*out = f;
	return 0;
}

/* The remote's facts as ours: its first available provider is the one it
 * would select, so its observations are what a run gets. */
static int facts_from_capabilities(const char *json, const char *url,
				   al_facts **out)
{
	json_t *root = json_loads(json, 0, NULL), *arr, *item;
	al_facts *f = NULL, *first = NULL;
	size_t i;
	int rc = 0;
	arr = json_object_get(root, "providers");
	if (!json_is_array(arr)) {
		rc = unavailable_facts("remote_protocol_error", out);
		goto out;
	}
	json_array_foreach(arr, i, item)
	{
		char *text = json_dumps(item, JSON_COMPACT);
		al_facts *g = NULL;
		if (text == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		int r = al_facts_from_json(text, strlen(text), &g, NULL);
		free(text);
		if (r < 0) {
			rc = unavailable_facts("remote_protocol_error", out);
			goto out;
		}
		if (g->available && f == NULL)
			f = g;
		else if (first == NULL)
			first = g;
		else
			al_facts_free(g);
	}
	if (f == NULL) {
		rc = unavailable_facts("remote_no_provider_available", out);
		goto out;
	}
	json_t *mech = json_pack("{s:s, s:s, s:s}", "remote_url", url,
				 "remote_provider", f->provider,
				 "remote_safety_class",
				 al_safety_class_name(f->safety_class));
	if (mech != NULL && f->mechanism_json != NULL) {
		json_t *inner = json_loads(f->mechanism_json, 0, NULL);
		if (inner != NULL)
			json_object_set_new(mech, "remote_mechanism", inner);
	}
	char *mtext = mech ? json_dumps(mech, JSON_COMPACT) : NULL;
	json_decref(mech);
	free(f->provider);
	free(f->mechanism_json);
	/* The remote program gets the back end's toolbelt (its host_api: the
	 * back-end tenant's operations) when the back end offers it to us,
	 * never this host's inbox (docs/toolbelt.md, "Remote"). */
	f->inject = f->interrupt = false;
	f->provider = strdup("remote");
	f->mechanism_json = mtext;
	f->safety_class = AL_SAFETY_REMOTE;
	if (f->provider == NULL || mtext == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	*out = f;
	f = NULL;
out:
	al_facts_free(f);
	al_facts_free(first);
	json_decref(root);
	return rc;
}

static int remote_probe(const char *config_json, al_facts **out,
			al_error **err)
{
	remote_cfg c;
	buf b = {0};
	long status;
	const char *why;
	int rc;

	*out = NULL;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return unavailable_facts("remote_unreachable", out);
	/* An invalid configuration is an observation (unavailable facts),
	 * not a failure of probe: its error is not the caller's. */
	al_error *cfg_err = NULL;
	rc = parse_cfg(config_json, &c, &cfg_err);
	if (rc < 0) {
		if (rc == -ENOMEM && err != NULL && *err == NULL) {
			*err = cfg_err;
			return rc;
		}
		al_error_free(cfg_err);
		return rc == -ENOMEM ? rc
				     : unavailable_facts("remote_config_invalid",
							 out);
	}
	if (http_call(&c, NULL, "GET", "/v1/capabilities", NULL, NULL, &status,
		      &b, &why) < 0)
		rc = unavailable_facts(why, out);
	else if (status == 401)
		rc = unavailable_facts("remote_unauthorized", out);
	else if (status != 200 || b.data == NULL)
		rc = unavailable_facts("remote_protocol_error", out);
	else
		rc = facts_from_capabilities(b.data, c.url, out);
	free(b.data);
	cfg_clear(&c);
	return rc;
}

/* ---- handle ---------------------------------------------------------- */

static int remote_ensure(const char *config_json, al_provider_handle **out,
			 al_error **err)
{
	al_provider_handle *h;
	int rc;
	*out = NULL;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return al_error_set(err, AL_ERR_UNAVAILABLE, EIO, "curl",
				    "libcurl could not be loaded or initialised");
	if ((h = calloc(1, sizeof(*h))) == NULL)
		return -ENOMEM;
	if ((rc = parse_cfg(config_json, &h->cfg, err)) < 0) {
		free(h);
		return rc;
	}
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&h->share_locks[i], NULL);
	al_run_registry_init(&h->runs);
	/* One connection cache per handle: runs reuse kept-alive
	 * connections to the remote. */
	h->share = curl_share_init();
	if (h->share == NULL ||
	    curl_share_setopt(h->share, CURLSHOPT_LOCKFUNC, share_lock) ||
	    curl_share_setopt(h->share, CURLSHOPT_UNLOCKFUNC, share_unlock) ||
	    curl_share_setopt(h->share, CURLSHOPT_USERDATA, h) ||
	    curl_share_setopt(h->share, CURLSHOPT_SHARE,
			      CURL_LOCK_DATA_CONNECT) ||
	    curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) ||
	    curl_share_setopt(h->share, CURLSHOPT_SHARE,
			      CURL_LOCK_DATA_SSL_SESSION)) {
		if (h->share != NULL)
			curl_share_cleanup(h->share);
		al_run_registry_destroy(&h->runs);
		for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
			pthread_mutex_destroy(&h->share_locks[i]);
		cfg_clear(&h->cfg);
		free(h);
		return al_error_set(err, AL_ERR_UNAVAILABLE, EIO, "curl",
				    "cannot share connections");
	}
	*out = h;
	return 0;
}

static int remote_health(al_provider_handle *h, al_error **err)
{
	buf b = {0};
	long status;
	const char *why;
	int rc = http_call(&h->cfg, h->share, "GET", "/v1/health", NULL, NULL,
			   &status, &b, &why);
	free(b.data);
	if (rc < 0)
		return al_error_set(err, AL_ERR_UNAVAILABLE, EIO, why,
				    "the remote service does not answer");
	if (status != 200)
		return al_error_set(err, AL_ERR_UNAVAILABLE, EIO, "remote_not_ready",
				    "the remote service is not ready");
	return 0;
}

static int remote_release(al_provider_handle *h, al_error **err)
{
	(void)err;
	if (h == NULL)
		return 0;
	curl_share_cleanup(h->share);
	al_run_registry_destroy(&h->runs);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&h->share_locks[i]);
	cfg_clear(&h->cfg);
	free(h);
	return 0;
}

static int remote_interrupt(al_provider_handle *h, const char *run_id,
			    al_error **err)
{
	/* The executing thread sees the token and interrupts the remote. */
	return al_run_registry_interrupt_run(&h->runs, run_id, err);
}

/* ---- execute --------------------------------------------------------- */

/* The event stream being followed. */
typedef struct stream {
	const al_exec *exec;
	char *line; /* partial line */
	size_t line_len;
	char event[16];
	buf data;	 /* the event's data lines */
	char *result;	 /* the result event's data */
	bool bad;	 /* protocol violation */
	unsigned n_events; /* toolbelt events passed on */
} stream;

static void deliver(stream *s)
{
	const al_exec *exec = s->exec;
	json_t *o = NULL;
	if (strcmp(s->event, "result") == 0) {
		free(s->result);
		s->result = s->data.data ? strdup(s->data.data) : NULL;
		if (s->result == NULL)
			s->bad = true;
		goto out;
	}
	if (strcmp(s->event, "event") == 0) {
		/* The back end's toolbelt event, passed on as it wrote it:
		 * a JSON object, as bounded as the back end's own. */
		/* json_is_object evaluates its argument twice: parse first */
		if (exec->on_output != NULL && s->data.data != NULL &&
		    s->data.len <= AL_OUTLOG_MAX_CHUNK &&
		    s->n_events < AL_TOOL_MAX_EVENTS)
			o = json_loads(s->data.data, 0, NULL);
		if (json_is_object(o)) {
			s->n_events++;
			exec->on_output(exec->on_output_ctx, AL_OUTLOG_EVENT,
					(const unsigned char *)s->data.data,
					s->data.len);
		}
		goto out;
	}
	int which = strcmp(s->event, "stdout") == 0	? AL_STDOUT
		    : strcmp(s->event, "stderr") == 0 ? AL_STDERR
						      : -1;
	if (which < 0 || exec->on_output == NULL || s->data.data == NULL)
		goto out;
	o = json_loads(s->data.data, 0, NULL);
	json_t *t = json_object_get(o, "data");
	json_t *b64 = json_object_get(o, "data_b64");
	if (json_is_string(t)) {
		exec->on_output(exec->on_output_ctx, which,
				(const unsigned char *)json_string_value(t),
				json_string_length(t));
	} else if (json_is_string(b64)) {
		unsigned char *raw = NULL;
		size_t n = 0;
		/* a chunk that is not canonical base64 is dropped, as one
		 * that cannot be decoded always was */
		if (al_base64_decode(json_string_value(b64),
				     json_string_length(b64), &raw, &n) == 0)
			exec->on_output(exec->on_output_ctx, which, raw, n);
		free(raw);
	}
out:
	json_decref(o);
	free(s->data.data);
	s->data = (buf){0};
	s->event[0] = '\0';
}

static void sse_line(stream *s, const char *line)
{
	if (line[0] == '\0') {
		if (s->event[0] != '\0')
			deliver(s);
		return;
	}
	if (line[0] == ':')
		return; /* comment / keep-alive */
	if (strncmp(line, "event: ", 7) == 0) {
		snprintf(s->event, sizeof(s->event), "%s", line + 7);
	} else if (strncmp(line, "data: ", 6) == 0) {
		if (s->data.len > 0 && buf_write("\n", 1, 1, &s->data) != 1)
			s->bad = true;
		size_t l = strlen(line + 6);
		if (buf_write((char *)line + 6, 1, l, &s->data) != l)
			s->bad = true;
	}
}

static size_t sse_write(char *p, size_t size, size_t n, void *ctx)
{
	stream *s = ctx;
	size_t len = size * n;
	for (size_t i = 0; i < len; i++) {
		if (p[i] == '\n') {
			char *l = s->line ? s->line : "";
			if (s->line)
				s->line[s->line_len] = '\0';
			sse_line(s, l);
			s->line_len = 0;
			continue;
		}
		if (s->line_len + 2 > MAX_BODY_BYTES) {
			s->bad = true;
			return 0;
		}
		char *nl = realloc(s->line, s->line_len + 2);
		if (nl == NULL)
			return 0;
		s->line = nl;
		s->line[s->line_len++] = p[i];
	}
	return len;
}

static void interrupt_remote(al_provider_handle *h, const char *rid)
{
	char *path = al_strdup_printf("/v1/runs/%s/interrupt", rid);
	buf b = {0};
	long status;
	const char *why;
	if (path != NULL)
		http_call(&h->cfg, h->share, "POST", path, "", NULL, &status,
			  &b, &why);
	free(b.data);
	free(path);
}

/* Follows /v1/runs/{rid}/events to the result, interrupting the remote
 * run when the cancel token fires.  0 with s->result, or -EIO with *why. */
static int follow(al_provider_handle *h, const al_exec *exec, const char *rid,
		  stream *s, const char **why)
{
	struct curl_slist *hdrs = NULL;
	char *url = NULL, *path = al_strdup_printf("/v1/runs/%s/events", rid);
	CURL *e = path ? easy_for(&h->cfg, h->share, path, NULL, &hdrs, &url)
		       : NULL;
	CURLM *m = curl_multi_init();
	bool interrupted = false;
	int rc = 0, running = 1;

	*why = "remote_unreachable";
	if (e == NULL || m == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sse_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, STREAM_IDLE_S);
	curl_multi_add_handle(m, e);
	while (running) {
		struct curl_waitfd cfd = {.fd = al_cancel_fd(exec->cancel),
					  .events = CURL_WAIT_POLLIN};
		int nfds = 0;
		if (curl_multi_perform(m, &running) != CURLM_OK) {
			rc = -EIO;
			goto out;
		}
		if (!running)
			break;
		if (curl_multi_poll(m, interrupted ? NULL : &cfd,
				    interrupted ? 0 : 1, 1000,
				    &nfds) != CURLM_OK) {
			rc = -EIO;
			goto out;
		}
		if (!interrupted &&
		    al_cancel_state(exec->cancel) != AL_CANCEL_NONE) {
			interrupted = true;
			interrupt_remote(h, rid);
		}
	}
	CURLMsg *msg;
	int left;
	long status = 0;
	while ((msg = curl_multi_info_read(m, &left)) != NULL)
		if (msg->msg == CURLMSG_DONE && msg->data.result != CURLE_OK)
			rc = -EIO;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	if (rc == 0 && (status != 200 || s->bad || s->result == NULL)) {
		*why = "remote_protocol_error";
		rc = -EIO;
	}
out:
	if (m != NULL && e != NULL)
		curl_multi_remove_handle(m, e);
	if (e != NULL)
		curl_easy_cleanup(e);
	if (m != NULL)
		curl_multi_cleanup(m);
	slist_free_wiped(hdrs);
	free(url);
	free(path);
	return rc;
}

/* Secrets may travel over https, or over plain http only to a loopback
 * address the URL names literally (127.0.0.0/8, [::1], localhost). */
static bool secrets_transport_ok(const char *url)
{
	if (strncmp(url, "https://", 8) == 0)
		return true;
	if (strncmp(url, "http://", 7) != 0)
		return false;
	const char *host = url + 7;
	size_t len = strcspn(host, "/?#");
	char hb[64];
	if (len == 0 || len >= sizeof(hb) || memchr(host, '@', len))
		return false; /* userinfo: not worth guessing at */
	memcpy(hb, host, len);
	hb[len] = '\0';
	if (hb[0] == '[')
		return strncmp(hb, "[::1]", 5) == 0 &&
		       (hb[5] == '\0' || hb[5] == ':');
	char *colon = strchr(hb, ':');
	if (colon != NULL)
		*colon = '\0';
	if (strcmp(hb, "localhost") == 0)
		return true;
	struct in_addr a;
	return inet_pton(AF_INET, hb, &a) == 1 &&
	       (ntohl(a.s_addr) >> 24) == 127;
}

/* The X-Airlock-Forwarded-Env header for exec->host_env: base64 of a JSON
 * object NAME -> value.  0 with *out (wipe it), -EINVAL (an entry is not
 * NAME=value, a name repeats, or past the bounds) or -ENOMEM. */
static int forwarded_header(const al_exec *exec, char **out)
{
	json_t *o = json_object();
	char *text = NULL, *hdr = NULL;
	int rc = -ENOMEM;
	*out = NULL;
	if (o == NULL)
		return -ENOMEM;
	if (exec->n_host_env > AL_MAX_FORWARDED_ENV) {
		rc = -EINVAL;
		goto out;
	}
	for (size_t i = 0; i < exec->n_host_env; i++) {
		const char *kv = exec->host_env[i], *eq = strchr(kv, '=');
		char name[AL_MAX_ENV_NAME_BYTES + 1];
		if (eq == NULL || eq == kv ||
		    (size_t)(eq - kv) > AL_MAX_ENV_NAME_BYTES) {
			rc = -EINVAL;
			goto out;
		}
		memcpy(name, kv, (size_t)(eq - kv));
		name[eq - kv] = '\0';
		json_t *v = json_string(eq + 1);
		if (v == NULL || json_object_get(o, name) != NULL) {
			json_decref(v);
			rc = -EINVAL; /* not UTF-8, or a repeated name */
			goto out;
		}
		if (json_object_set_new(o, name, v) < 0)
			goto out;
	}
	if ((text = json_dumps(o, JSON_COMPACT)) == NULL)
		goto out;
	size_t tl = strlen(text);
	if (tl > AL_MAX_FORWARDED_ENV_BYTES) {
		rc = -EINVAL;
		goto out;
	}
	size_t hl = strlen(FWD_HEADER);
	char *b64 = al_base64_encode(text, tl);
	if (b64 == NULL)
		goto out;
	size_t bl = strlen(b64);
	if ((hdr = malloc(hl + bl + 1)) != NULL) {
		memcpy(hdr, FWD_HEADER, hl);
		memcpy(hdr + hl, b64, bl + 1);
		*out = hdr;
		rc = 0;
	}
	/* the environment's values, encoded: wiped before they go */
	al_explicit_free_str(b64);
out:
	if (text != NULL)
		al_explicit_free_str(text);
	/* jansson's copies of the values: wiped before they go. */
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		explicit_bzero((char *)json_string_value(v),
			       json_string_length(v));
	}
	json_decref(o);
	return rc;
}

/* Moves a parsed result into the caller's, keeping our run id. */
static void adopt_result(al_result *res, al_result *got, const char *run_id)
{
	al_result tmp = *res;
	*res = *got;
	*got = tmp;
	snprintf(res->run_id, sizeof(res->run_id), "%s", run_id);
}

static int parse_result(const char *json, al_result *res, const al_exec *exec)
{
	al_result *got = NULL;
	if (json == NULL || al_result_from_json(json, strlen(json), &got,
						NULL) < 0)
		return -EPROTO;
	adopt_result(res, got, exec->run_id);
	al_result_free(got);
	/* Its log artifact and inbox are the remote host's, not ours. */
	free(res->log_artifact);
	res->log_artifact = NULL;
	for (size_t i = 0; i < res->n_inbox_pending; i++)
		free(res->inbox_pending[i]);
	free(res->inbox_pending);
	res->inbox_pending = NULL;
	res->n_inbox_pending = 0;
	/* The remote host appended its truncation notice; providers never
	 * annotate (our host adds its own), so keep exactly the cap. */
	uint64_t cap = exec->request->limits.output_bytes;
	for (int s = 0; s < 2; s++) {
		if (res->truncated[s] && res->output[s].len > cap) {
			res->output[s].len = (size_t)cap;
			res->output[s].data[cap] = '\0';
		}
	}
	return 0;
}

static int remote_execute(al_provider_handle *h, const al_exec *exec,
			  al_result *res, al_error **err)
{
	al_run_entry entry = {0};
	char *body = al_request_to_json(exec->request);
	buf b = {0};
	stream s = {.exec = exec};
	long status = 0;
	const char *why = "remote_unreachable";
	char rid[40] = "", *id_hdr = NULL, *fwd_hdr = NULL;
	const char *extra[3] = {NULL, NULL, NULL};
	int rc = 0;
	(void)err;

	snprintf(res->run_id, sizeof(res->run_id), "%s", exec->run_id);
	if (body == NULL)
		return -ENOMEM;
	al_run_registry_add(&h->runs, &entry, exec->run_id, exec->cancel);
	/* Everything that could refuse is decided before anything is sent.
	 * The remote runs the program under our run id (AIRLOCK_RUN_ID). */
	if (!al_run_id_canonical(exec->run_id)) {
		why = "run_id_not_uuid";
		goto unavailable;
	}
	if ((id_hdr = al_strdup_printf(RUN_ID_HEADER "%s", exec->run_id)) ==
	    NULL) {
		rc = -ENOMEM;
		goto out;
	}
	extra[0] = id_hdr;
	/* The secrets our host resolved travel in a header of their own
	 * (the body never carries credentials), and only where no one can
	 * read them on the way. */
	if (exec->n_host_env > 0) {
		if (!secrets_transport_ok(h->cfg.url)) {
			why = "secrets_need_tls";
			goto unavailable;
		}
		int fr = forwarded_header(exec, &fwd_hdr);
		if (fr == -ENOMEM) {
			rc = fr;
			goto out;
		}
		if (fr < 0) {
			why = "forwarded_env_invalid";
			goto unavailable;
		}
		extra[1] = fwd_hdr;
	}
	if (http_call(&h->cfg, h->share, "POST", "/v1/runs?wait=false", body,
		      extra, &status, &b, &why) < 0)
		goto unavailable;
	if (status == 401) {
		why = "remote_unauthorized";
		goto unavailable;
	}
	json_t *acc = status == 202 ? json_loads(b.data ? b.data : "", 0, NULL)
				    : NULL;
	const char *id = json_string_value(json_object_get(acc, "run_id"));
	if (id != NULL && strlen(id) < sizeof(rid))
		snprintf(rid, sizeof(rid), "%s", id);
	json_decref(acc);
	if (status != 202) {
		/* A refusal answered at once is a typed result; a busy or
		 * stopping service answers a typed error instead. */
		why = status == 503 || status == 429 ? "remote_unavailable"
						     : "remote_protocol_error";
		if (parse_result(b.data, res, exec) < 0)
			goto unavailable;
		goto out;
	}
	if (rid[0] == '\0' || strspn(rid, "abcdefghijklmnopqrstuvwxyz"
					  "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
					  "0123456789-_") != strlen(rid)) {
		why = "remote_protocol_error";
		goto unavailable;
	}
	if (follow(h, exec, rid, &s, &why) < 0 ||
	    parse_result(s.result, res, exec) < 0) {
		if (s.result != NULL)
			why = "remote_protocol_error";
		/* The remote run may still be going: stop it. */
		interrupt_remote(h, rid);
		goto unavailable;
	}
	/* The caller gave up (not an operator interrupt): say so. */
	if (al_cancel_state(exec->cancel) == AL_CANCEL_CANCELLED &&
	    res->outcome == AL_OUTCOME_INTERRUPTED) {
		res->has_signal = false;
		rc = al_result_set_outcome(res, AL_OUTCOME_CANCELLED, NULL);
	}
	goto out;
unavailable:
	/* No result came back: whatever may have run remotely, this side
	 * has no process to report. */
	for (int i = 0; i < 2; i++) {
		al_bytes_clear(&res->output[i]);
		if (al_bytes_set(&res->output[i], "", 0) < 0)
			rc = -ENOMEM;
		res->output_seen[i] = 0;
		res->truncated[i] = false;
	}
	res->has_exit_code = res->has_signal = false;
	if (rc == 0)
		rc = al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE, why);
out:
	al_run_registry_remove(&h->runs, &entry);
	free(id_hdr);
	if (fwd_hdr != NULL)
		al_explicit_free_str(fwd_hdr);
	free(s.line);
	free(s.data.data);
	free(s.result);
	free(b.data);
	free(body);
	return rc;
}

/* In the CLI's lazily loaded network module the table has its own name,
 * so it does not collide with the CLI's stand-in `al_remote_provider`
 * (src/cli/net_module.c), which finds it with dlsym. */
#ifdef AL_NET_MODULE
#define REMOTE_OPS al_remote_provider_module
#else
#define REMOTE_OPS al_remote_provider
#endif
const al_provider_ops REMOTE_OPS = {
	AL_ABI_HEADER(al_provider_ops),
	.id = "remote",
	.probe = remote_probe,
	.ensure = remote_ensure,
	.health = remote_health,
	.execute = remote_execute,
	.interrupt = remote_interrupt,
	.release = remote_release,
};
