/* A compat request as an ordinary airlock run: the translated /v1
 * request goes through al_service_submit like POST /v1/runs (gates,
 * audit, slots, limits, metrics, the runs list), and its output is
 * followed as it arrives so Piston's "output" keeps the order of the
 * two streams. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <airlock/host.h>

#include "host/config.h"
#include <airlock/json.h>

#include "json/base64.h"
#include "server/compat.h"

void al_compat_out_clear(al_compat_out *out)
{
	json_decref(out->result);
	free(out->output);
	*out = (al_compat_out){0};
}

/* Appends the run's buffered events from *next on (lock held). */
static void take_events(al_srv_run *run, uint64_t *next, al_compat_out *out)
{
	for (size_t i = 0; i < run->n_events; i++) {
		const al_srv_event *ev = &run->events[i];
		if (ev->seq < *next)
			continue;
		if (ev->seq != *next)
			out->output_whole = false; /* dropped before we saw it */
		unsigned char *p =
			realloc(out->output, out->output_len + ev->len + 1);
		if (p == NULL) {
			out->output_whole = false;
			return;
		}
		memcpy(p + out->output_len, ev->data, ev->len);
		out->output = p;
		out->output_len += ev->len;
		p[out->output_len] = '\0';
		*next = ev->seq + 1;
	}
}

static int read_stored(al_service *svc, const char *tenant,
		       const char *run_id, al_srv_run *run, json_t **out)
{
	al_srv_stored st;
	int rc = al_service_stored_result(svc, tenant, run_id, run, &st);
	if (rc < 0)
		return rc;
	if (st.fd < 0) {
		*out = json_loads(st.text ? st.text : "", 0, NULL);
	} else {
		char *buf = malloc(st.size + 1);
		size_t got = 0;
		while (buf != NULL && got < st.size) {
			ssize_t n = pread(st.fd, buf + got, st.size - got,
					  (off_t)got);
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		*out = buf ? json_loadb(buf, got, 0, NULL) : NULL;
		free(buf);
	}
	al_srv_stored_clear(&st);
	return *out != NULL ? 0 : -ENOMEM;
}

int al_compat_stream(const json_t *result, const char *name,
		     unsigned char **out, size_t *len)
{
	char key[32];
	*out = NULL;
	*len = 0;
	const json_t *v = json_object_get(result, name);
	if (json_is_string(v)) {
		*len = json_string_length(v);
		*out = malloc(*len + 1);
		if (*out == NULL)
			return -ENOMEM;
		memcpy(*out, json_string_value(v), *len);
		(*out)[*len] = '\0';
		return 0;
	}
	snprintf(key, sizeof(key), "%s_b64", name);
	v = json_object_get(result, key);
	if (json_is_string(v))
		return al_base64_decode(json_string_value(v),
					json_string_length(v), out, len);
	*out = calloc(1, 1);
	return *out ? 0 : -ENOMEM;
}

/* The order of arrival is kept only when it holds exactly the bytes the
 * result kept of both streams. */
static void check_whole(al_compat_out *out)
{
	unsigned char *a = NULL, *b = NULL;
	size_t la = 0, lb = 0;
	if (out->result == NULL ||
	    al_compat_stream(out->result, "stdout", &a, &la) < 0 ||
	    al_compat_stream(out->result, "stderr", &b, &lb) < 0 ||
	    la + lb != out->output_len)
		out->output_whole = false;
	free(a);
	free(b);
}

int al_compat_run(al_service *svc, const char *tenant, const char *principal,
		  json_t *req, bool wait, al_compat_out *out)
{
	*out = (al_compat_out){.output_whole = true};
	/* The order of arrival needs the run's live output, which a run
	 * gets only with a streaming grant: asked for when the tenant may
	 * have it (else the streams are joined stdout first). */
	al_srv_gen *g0 = al_service_gen_get(svc);
	const al_cfg_tenant *t = g0 ? al_config_tenant(g0->cfg, tenant) : NULL;
	bool stream = t != NULL && t->grant.streaming;
	al_service_gen_put(svc, g0);
	if (stream) {
		json_t *grant = json_object_get(req, "grant");
		if (grant == NULL) {
			grant = json_object();
			json_object_set_new(req, "grant", grant);
		}
		json_object_set_new(grant, "streaming", json_true());
	} else {
		out->output_whole = false;
	}
	char *body = json_dumps(req, JSON_COMPACT);
	if (body == NULL)
		return -ENOMEM;
	al_srv_submit_headers hdrs = {0};
	al_srv_run *run = NULL;
	al_srv_gen *gen = al_service_gen_get(svc);
	int err = gen ? al_service_submit(svc, gen, tenant, principal, body,
					  strlen(body), &hdrs, &run)
		      : -ESHUTDOWN;
	al_service_gen_put(svc, gen);
	free(body);
	if (err < 0)
		return err;
	uint64_t next = 0;
	pthread_mutex_lock(&svc->lock);
	for (;;) {
		take_events(run, &next, out);
		bool done = run->state == AL_SRV_RUN_DONE;
		/* persisted and named: an interactive run's stdin set-up
		 * wakes waiters before its id is announced */
		if (done || svc->closing ||
		    (!wait && run->has_dir && run->run_id[0] != '\0'))
			break;
		pthread_cond_wait(&run->changed, &svc->lock);
	}
	out->done = run->state == AL_SRV_RUN_DONE;
	out->status = run->status;
	memcpy(out->run_id, run->run_id, sizeof(out->run_id));
	pthread_mutex_unlock(&svc->lock);
	if (out->done &&
	    read_stored(svc, tenant, out->run_id, run, &out->result) < 0)
		err = -ENOMEM;
	if (out->done)
		check_whole(out);
	else if (wait)
		err = -ESHUTDOWN;
	al_service_run_put(svc, run);
	return err;
}

int al_compat_lookup(al_service *svc, const char *tenant, const char *run_id,
		     al_compat_out *out)
{
	*out = (al_compat_out){0};
	al_srv_run *run = al_service_find(svc, tenant, run_id);
	bool done = true;
	if (run != NULL) {
		pthread_mutex_lock(&svc->lock);
		done = run->state == AL_SRV_RUN_DONE;
		out->status = run->status;
		/* Not yet handed to a supervisor: waiting for a slot. */
		out->queued = !done && !run->launched;
		pthread_mutex_unlock(&svc->lock);
	}
	snprintf(out->run_id, sizeof(out->run_id), "%s", run_id);
	int rc;
	if (!done)
		rc = al_service_owns(svc, tenant, run_id, run) == 0 ? 1
								     : -ENOENT;
	else
		rc = read_stored(svc, tenant, run_id, run, &out->result);
	out->done = rc == 0;
	al_service_run_put(svc, run);
	return rc;
}

json_t *al_compat_languages(al_service *svc, const char *tenant)
{
	al_host_context hc = {.tenant = tenant, .principal = NULL};
	al_facts **facts = NULL;
	size_t n = 0;
	al_error *err = NULL;
	json_t *arr = json_array();
	al_srv_gen *gen = al_service_gen_get(svc);
	int rc = gen ? al_host_capabilities(gen->host, &hc, &facts, &n, &err)
		     : -ESHUTDOWN;
	al_service_gen_put(svc, gen);
	al_error_free(err);
	if (rc < 0 || arr == NULL) {
		json_decref(arr);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!facts[i]->available)
			continue;
		char *f = al_facts_to_json(facts[i], 0);
		json_t *o = f ? json_loads(f, 0, NULL) : NULL;
		free(f);
		json_t *langs = json_object_get(o, "languages");
		size_t j;
		json_t *l;
		json_array_foreach(langs, j, l) {
			const char *name = json_string_value(
				json_object_get(l, "language"));
			bool seen = false;
			size_t k;
			json_t *m;
			json_array_foreach(arr, k, m) {
				seen = seen ||
				       (name != NULL &&
					strcmp(name,
					       json_string_value(json_object_get(
						       m, "language"))) == 0);
			}
			if (name != NULL && !seen)
				json_array_append(arr, l);
		}
		json_decref(o);
	}
	al_facts_array_free(facts, n);
	return arr;
}

uint64_t al_compat_ceiling(al_service *svc, const char *tenant,
			   const char *limit)
{
	uint64_t v = 0;
	al_srv_gen *gen = al_service_gen_get(svc);
	const al_cfg_tenant *t = gen ? al_config_tenant(gen->cfg, tenant) : NULL;
	if (t != NULL) {
		if (strcmp(limit, "memory_bytes") == 0)
			v = t->ceilings.memory_bytes;
		else if (strcmp(limit, "wall_ms") == 0)
			v = t->ceilings.wall_ms;
		else if (strcmp(limit, "cpu_ms") == 0)
			v = t->ceilings.cpu_ms;
		else if (strcmp(limit, "pids") == 0)
			v = t->ceilings.pids;
		else if (strcmp(limit, "file_bytes") == 0)
			v = t->ceilings.file_bytes;
	}
	al_service_gen_put(svc, gen);
	return v;
}

json_t *al_compat_text(const unsigned char *p, size_t n)
{
	if (al_utf8_valid(p, n))
		return json_stringn((const char *)p, n);
	/* Like a JavaScript client decoding the bytes: each invalid byte
	 * becomes U+FFFD. */
	char *buf = malloc(n * 3 + 1);
	size_t w = 0;
	if (buf == NULL)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t k = 1;
		while (k <= 4 && i + k <= n && !al_utf8_valid(p + i, k))
			k++;
		if (k <= 4 && i + k <= n && (p[i] & 0xc0) != 0x80) {
			memcpy(buf + w, p + i, k);
			w += k;
			i += k;
		} else {
			static const unsigned char fffd[3] = {0xef, 0xbf, 0xbd};
			memcpy(buf + w, fffd, sizeof(fffd));
			w += sizeof(fffd);
			i++;
		}
	}
	json_t *j = json_stringn(buf, w);
	free(buf);
	return j;
}
