/* The container provider's Docker Engine variant (docs/containers.md,
 * "Docker"): the Engine API over its Unix socket with libcurl — create
 * (network none, memory and pids limits, read-only root, no
 * capabilities, no_new_privs, the run's uid), start, wait, logs, delete.
 * Built into the remote provider's module (libcurl stays out of the CLI's
 * start-up); the provider finds it with al_ct_docker_engine(). */
#include "providers/curl_lib.h"
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "container/container.h"
#include "core/util.h"

typedef struct buf {
	char *data;
	size_t len, cap, max;
} buf;

static size_t on_data(char *p, size_t sz, size_t n, void *ctx)
{
	buf *b = ctx;
	size_t len = sz * n;
	if (b->len + len > b->max)
		return 0; /* larger than anything the Engine should send */
	if (b->len + len + 1 > b->cap) {
		size_t cap = (b->len + len + 1) * 2;
		char *d = realloc(b->data, cap);
		if (d == NULL)
			return 0;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, len);
	b->len += len;
	b->data[b->len] = '\0';
	return len;
}

/* One request; the response body in *out (caller frees).  The HTTP
 * status, or a negative errno when the Engine could not be reached. */
static long call(const char *sock, const char *method, const char *path,
		 const char *ctype, const void *body, size_t blen, buf *out,
		 long timeout_ms)
{
	if (!al_curl_loaded())
		return -ENOSYS; /* no libcurl on this host */
	CURL *e = curl_easy_init();
	if (e == NULL)
		return -ENOMEM;
	char url[1024];
	snprintf(url, sizeof(url), "http://docker/v1.41%s", path);
	struct curl_slist *h = NULL;
	if (ctype != NULL) {
		char line[128];
		snprintf(line, sizeof(line), "Content-Type: %s", ctype);
		h = curl_slist_append(h, line);
	}
	curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, sock);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
	if (h != NULL)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	if (body != NULL) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)blen);
	} else if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
	}
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, out);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	CURLcode c = curl_easy_perform(e);
	long status = 0;
	if (c == CURLE_OK)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(e);
	return c == CURLE_OK ? status : -EIO;
}

static void buf_clear(buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
	b->max = 64u << 20;
}

/* ustar header for an entry of the default image's tree. */
static void tar_entry(unsigned char *h, const char *name, char type,
		      const char *link, unsigned mode)
{
	memset(h, 0, 512);
	snprintf((char *)h, 100, "%s", name);
	snprintf((char *)h + 100, 8, "%07o", mode);
	snprintf((char *)h + 108, 8, "%07o", 0);
	snprintf((char *)h + 116, 8, "%07o", 0);
	snprintf((char *)h + 124, 12, "%011o", 0);
	snprintf((char *)h + 136, 12, "%011o", 0);
	h[156] = (unsigned char)type;
	if (link != NULL)
		snprintf((char *)h + 157, 100, "%s", link);
	/* "ustar\0" then the version "00", no terminator (POSIX) */
	static const unsigned char magic[8] = {'u', 's', 't', 'a',
					       'r', '\0', '0', '0'};
	memcpy(h + 257, magic, sizeof(magic));
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
}

/* The default image: an empty root with the merged-/usr links and the
 * run's mount points (the host's /usr is bound in, as for runc). */
static int ensure_image(const char *sock)
{
	buf b = {.max = 1u << 20};
	long st = call(sock, "GET", "/images/" AL_CT_DOCKER_IMAGE "/json", NULL,
		       NULL, 0, &b, 10000);
	buf_clear(&b);
	if (st == 200)
		return 0;
	static const struct {
		const char *name, *link;
	} ents[] = {{"bin", "usr/bin"},	  {"lib", "usr/lib"},
		    /* a directory: the Engine mounts its init at
		     * /sbin/docker-init, which the read-only /usr bind
		     * behind a link would refuse */
		    {"lib64", "usr/lib64"}, {"sbin/", NULL},
		    {"usr/", NULL},	  {"etc/", NULL},
		    {"tmp/", NULL},	  {"code/", NULL},
		    {"workspace/", NULL},	  {"build/", NULL},
		    {"inbox/", NULL},	  {"inbox-acks/", NULL},
		    {"dev/", NULL},	  {"proc/", NULL}};
	size_t n = sizeof(ents) / sizeof(ents[0]);
	size_t len = (n + 2) * 512;
	unsigned char *tar = calloc(1, len);
	if (tar == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		/* /tmp's tmpfs takes the mode of the image's directory */
		tar_entry(tar + i * 512, ents[i].name, ents[i].link ? '2' : '5',
			  ents[i].link,
			  ents[i].link			     ? 0777
			  : strcmp(ents[i].name, "tmp/") == 0 ? 01777
							     : 0755);
	st = call(sock, "POST",
		  "/images/create?fromSrc=-&repo=airlock-hostusr&tag=3",
		  "application/x-tar", tar, len, &b, 60000);
	free(tar);
	buf_clear(&b);
	return st == 200 ? 0 : -EIO;
}

int al_ct_docker_version(const char *sock, char **version)
{
	buf b = {.max = 1u << 20};
	long st = call(sock, "GET", "/version", NULL, NULL, 0, &b, 10000);
	json_t *o = st == 200 ? json_loads(b.data, 0, NULL) : NULL;
	const char *v = json_string_value(json_object_get(o, "Version"));
	*version = v ? al_strdup_printf("Docker Engine %s", v) : NULL;
	json_decref(o);
	buf_clear(&b);
	return *version ? 0 : st < 0 ? (int)st : -EIO;
}

/* The logs' multiplexed stream into the two outputs, capped. */
static void demux(const buf *b, uint64_t cap, al_result *res)
{
	al_bytes out[2] = {{0}, {0}};
	char *acc[2] = {NULL, NULL};
	size_t alen[2] = {0, 0};
	for (size_t off = 0; off + 8 <= b->len;) {
		const unsigned char *h = (const unsigned char *)b->data + off;
		size_t sz = ((size_t)h[4] << 24) | ((size_t)h[5] << 16) |
			    ((size_t)h[6] << 8) | h[7];
		int s = h[0] == 2 ? 1 : 0;
		off += 8;
		if (off + sz > b->len)
			sz = b->len - off;
		res->output_seen[s] += sz;
		size_t take = alen[s] < cap ? (cap - alen[s] < sz ? cap - alen[s]
								: sz)
					    : 0;
		if (take) {
			char *d = realloc(acc[s], alen[s] + take);
			if (d != NULL) {
				memcpy(d + alen[s], b->data + off, take);
				acc[s] = d;
				alen[s] += take;
			}
		}
		off += sz;
	}
	for (int s = 0; s < 2; s++) {
		al_bytes_clear(&res->output[s]);
		al_bytes_set(&res->output[s], acc[s] ? acc[s] : "", alen[s]);
		res->truncated[s] = res->output_seen[s] > alen[s];
		free(acc[s]);
	}
	(void)out;
}

static json_t *strv_json(char *const *v)
{
	json_t *a = json_array();
	for (size_t i = 0; a && v && v[i]; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

int al_ct_docker_run(const al_ct_docker_in *in, al_result *res, al_error **err)
{
	const al_request *req = in->req;
	const al_limits *l = &req->limits;
	buf b = {.max = 64u << 20};
	char path[512], id[80] = "";
	int rc = ensure_image(in->socket);
	if (rc < 0)
		return al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					     "container_unavailable");
	char user[32];
	snprintf(user, sizeof(user), "%u:%u", (unsigned)in->uid,
		 (unsigned)in->uid);
	json_t *binds = json_array();
	for (size_t i = 0; binds && in->binds && in->binds[i]; i++)
		json_array_append_new(binds, json_string(in->binds[i]));
	json_t *tmpfs = json_pack("{s:s}", "/tmp", in->tmp_opts);
	json_t *ulimits = json_pack("[{s:s, s:I, s:I}, {s:s, s:i, s:i}]",
				    "Name", "nofile", "Soft",
				    (json_int_t)l->open_files, "Hard",
				    (json_int_t)l->open_files, "Name", "core",
				    "Soft", 0, "Hard", 0);
	if (ulimits != NULL && l->file_bytes > 0)
		json_array_append_new(ulimits,
				      json_pack("{s:s, s:I, s:I}", "Name",
						"fsize", "Soft",
						(json_int_t)l->file_bytes, "Hard",
						(json_int_t)l->file_bytes));
	if (ulimits != NULL && l->cpu_ms > 0) {
		json_int_t s = (json_int_t)((l->cpu_ms + 999) / 1000);
		/* a second of headroom: SIGXCPU names the cause first */
		json_array_append_new(ulimits,
				      json_pack("{s:s, s:I, s:I}", "Name", "cpu",
						"Soft", s, "Hard", s + 1));
	}
	json_t *body = json_pack(
		"{s:s, s:o, s:o, s:s, s:s, s:b, s:b, s:b, s:{s:s, s:b, s:[s], "
		"s:[s], s:I, s:I, s:I, s:o, s:o, s:o, s:b, s:{s:s}}}",
		"Image", AL_CT_DOCKER_IMAGE, "Cmd", strv_json(in->argv), "Env",
		strv_json(in->envp), "User", user, "WorkingDir", "/workspace",
		"NetworkDisabled", 1, "AttachStdout", 0, "Tty", 0, "HostConfig",
		"NetworkMode", "none", "ReadonlyRootfs", 1, "CapDrop", "ALL",
		"SecurityOpt", "no-new-privileges", "Memory",
		(json_int_t)in->memory, "MemorySwap", (json_int_t)in->memory,
		"PidsLimit", (json_int_t)in->pids, "Binds", binds, "Tmpfs",
		tmpfs, "Ulimits", ulimits,
		/* an init (the Engine's) as pid 1: the program's own signals
		 * and SIGXCPU reach it */
		"Init", 1,
		/* the "local" log driver keeps the bytes as they are (the
		 * default json-file one replaces what is not UTF-8) */
		"LogConfig", "Type", "local");
	if (body != NULL && in->seccomp != NULL) {
		json_t *sec = json_object_get(json_object_get(body, "HostConfig"),
					      "SecurityOpt");
		char *opt = al_strdup_printf("seccomp=%s", in->seccomp);
		if (opt != NULL)
			json_array_append_new(sec, json_string(opt));
		free(opt);
	}
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (text == NULL)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/containers/create?name=%s", in->name);
	long st = call(in->socket, "POST", path, "application/json", text,
		       strlen(text), &b, 30000);
	free(text);
	json_t *o = st == 201 ? json_loads(b.data, 0, NULL) : NULL;
	const char *cid = json_string_value(json_object_get(o, "Id"));
	if (cid != NULL)
		snprintf(id, sizeof(id), "%.64s", cid);
	json_decref(o);
	buf_clear(&b);
	if (id[0] == '\0')
		return al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					     "container_start_failed");
	int64_t t0 = al_now_ms();
	snprintf(path, sizeof(path), "/containers/%s/start", id);
	st = call(in->socket, "POST", path, NULL, NULL, 0, &b, 30000);
	buf_clear(&b);
	al_outcome end = AL_OUTCOME_COMPLETED;
	bool started = st == 204 || st == 304;
	bool signalled = false;
	int64_t kill_at = 0;
	/* Wait: the state, polled, against the deadline and the cancel. */
	while (started) {
		snprintf(path, sizeof(path), "/containers/%s/json", id);
		st = call(in->socket, "GET", path, NULL, NULL, 0, &b, 10000);
		o = st == 200 ? json_loads(b.data, 0, NULL) : NULL;
		buf_clear(&b);
		json_t *state = json_object_get(o, "State");
		bool running = json_is_true(json_object_get(state, "Running"));
		json_decref(o);
		if (!running || st != 200)
			break;
		int64_t now = al_now_ms();
		al_cancel_kind ck = al_cancel_state(in->cancel);
		if (!signalled && (ck != AL_CANCEL_NONE ||
				   (uint64_t)(now - t0) >= l->wall_ms)) {
			end = ck == AL_CANCEL_CANCELLED     ? AL_OUTCOME_CANCELLED
			      : ck == AL_CANCEL_INTERRUPTED ? AL_OUTCOME_INTERRUPTED
							    : AL_OUTCOME_TIMED_OUT;
			snprintf(path, sizeof(path),
				 "/containers/%s/kill?signal=TERM", id);
			call(in->socket, "POST", path, NULL, NULL, 0, &b, 10000);
			buf_clear(&b);
			signalled = true;
			kill_at = now + AL_DEFAULT_GRACE_MS;
		} else if (signalled && now >= kill_at) {
			snprintf(path, sizeof(path),
				 "/containers/%s/kill?signal=KILL", id);
			call(in->socket, "POST", path, NULL, NULL, 0, &b, 10000);
			buf_clear(&b);
			kill_at = now + 1000;
		}
		struct timespec ts = {0, 20 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	res->usage.wall_ms = (uint64_t)(al_now_ms() - t0);
	if (!started) {
		rc = al_result_set_outcome(res, AL_OUTCOME_UNAVAILABLE,
					   "container_start_failed");
		goto remove;
	}
	snprintf(path, sizeof(path), "/containers/%s/logs?stdout=1&stderr=1",
		 id);
	if (call(in->socket, "GET", path, NULL, NULL, 0, &b, 30000) == 200)
		demux(&b, l->output_bytes, res);
	buf_clear(&b);
	snprintf(path, sizeof(path), "/containers/%s/json", id);
	st = call(in->socket, "GET", path, NULL, NULL, 0, &b, 10000);
	o = st == 200 ? json_loads(b.data, 0, NULL) : NULL;
	buf_clear(&b);
	json_t *state = json_object_get(o, "State");
	int code = (int)json_integer_value(json_object_get(state, "ExitCode"));
	bool oom = json_is_true(json_object_get(state, "OOMKilled"));
	json_decref(o);
	if (end != AL_OUTCOME_COMPLETED) {
		rc = al_result_set_outcome(res, end, NULL);
	} else if (oom) {
		res->has_signal = true;
		res->signal = SIGKILL;
		rc = al_result_set_outcome(res, AL_OUTCOME_KILLED, "memory_limit");
	} else if (code > 128 && code < 128 + 65) {
		/* the Engine reports a death by signal N as 128+N */
		res->has_signal = true;
		res->signal = code - 128;
		rc = al_result_set_outcome(res, AL_OUTCOME_KILLED,
					   res->signal == SIGXCPU ? "cpu_limit"
					   : res->signal == SIGXFSZ
						   ? "file_size_limit"
						   : "signal");
	} else {
		res->has_exit_code = true;
		res->exit_code = code;
		rc = al_result_set_outcome(res, code == 0 ? AL_OUTCOME_COMPLETED
							  : AL_OUTCOME_FAILED,
					   NULL);
	}
remove:
	snprintf(path, sizeof(path), "/containers/%s?force=1", id);
	st = call(in->socket, "DELETE", path, NULL, NULL, 0, &b, 30000);
	buf_clear(&b);
	if (st != 204 && rc == 0)
		rc = al_error_set(err, AL_ERR_INTERNAL, EBUSY, NULL,
				  "the container could not be deleted");
	return rc;
}

static const al_ct_engine engine = {
	.version = al_ct_docker_version,
	.run = al_ct_docker_run,
};

const al_ct_engine *al_ct_docker_engine(void)
{
	return &engine;
}
