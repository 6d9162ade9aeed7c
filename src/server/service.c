/* The run table: runs start on their own threads, keep a bounded buffer of
 * live output for late subscribers, and stay queryable (bounded, oldest
 * finished evicted first, with their run directories) after they end.
 * An admitted run is executed by its supervisor (durable_run.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include <airlock/json.h>

#include "core/log.h"
#include "core/util.h"
#include "server/compat.h"
#include "server/service.h"
#include "supervisor/outlog.h"
#include "server/carry.h"
#include "supervisor/run_records.h"

int al_service_init(al_service *svc, const al_server_options *opts)
{
	memset(svc, 0, sizeof(*svc));
	svc->opts = *opts;
	svc->max_runs = AL_SRV_MAX_RUNS;
	/* Tests shrink the table to show that nothing depends on it
	 * (docs/api.md, "Run ids"); it can only shrink. */
	const char *env = getenv("AIRLOCK_RUN_TABLE_MAX");
	if (env != NULL) {
		char *end = NULL;
		unsigned long v = strtoul(env, &end, 10);
		if (end != env && *end == '\0' && v >= 1 &&
		    v < AL_SRV_MAX_RUNS) {
			svc->max_runs = v;
			/* Said, so a test can tell the bound is in force. */
			al_logf(AL_LOG_INFO, NULL,
				"run table holds at most %lu runs "
				"(AIRLOCK_RUN_TABLE_MAX)",
				v);
		}
	}
	if ((svc->metrics = al_srv_metrics_new()) == NULL)
		return -ENOMEM;
	pthread_mutex_init(&svc->lock, NULL);
	pthread_cond_init(&svc->idle, NULL);
	return 0;
}

/* Wipes and frees the forwarded environment header's copy. */
static void drop_headers(al_srv_run *run)
{
	if (run->forwarded_env != NULL) {
		explicit_bzero(run->forwarded_env, strlen(run->forwarded_env));
		free(run->forwarded_env);
		run->forwarded_env = NULL;
	}
	free(run->asked_run_id);
	run->asked_run_id = NULL;
}

static void run_free(al_srv_run *run)
{
	if (run->stdin_open)
		close(run->stdin_fd);
	drop_headers(run);
	al_drun_free(run->drun);
	if (run->adopted != NULL)
		al_admission_free(run->adopted);
	for (size_t i = 0; i < run->n_events; i++)
		free(run->events[i].data);
	free(run->events);
	free(run->build_stage);
	free(run->tenant);
	free(run->result_json);
	free(run->body);
	al_cancel_free(run->cancel);
	pthread_cond_destroy(&run->changed);
	free(run);
}

void al_srv_gen_free(al_srv_gen *gen)
{
	if (gen == NULL)
		return;
	al_host_free(gen->host);
	al_config_free(gen->cfg);
	al_auth_free(gen->auth);
	al_compat_cfg_free(gen->compat);
	free(gen);
}

/* Call with the lock held; returns the gen to free outside it, or NULL. */
static al_srv_gen *gen_put_locked(al_srv_gen *gen)
{
	if (gen == NULL || --gen->refs > 0)
		return NULL;
	return gen;
}

static unsigned runs_in_flight(void *ctx)
{
	al_service *svc = ctx;
	pthread_mutex_lock(&svc->lock);
	unsigned n = svc->active;
	pthread_mutex_unlock(&svc->lock);
	return n;
}

int al_service_idle_start(al_service *svc)
{
	al_srv_gen *gen = al_service_gen_get(svc);
	al_idle_pool *p = NULL;
	int rc = gen == NULL ? -ESHUTDOWN : 0;
	al_durable_sweep_idle(svc->durable);
	/* Without them each run makes its own directory, as it can. */
	int spares = rc == 0 ? al_durable_spares_start(
				       svc->durable, gen->cfg->spare_run_dirs)
			     : 0;
	if (spares < 0)
		al_logf(AL_LOG_WARN, NULL,
			"cannot make run directories ahead: %s",
			strerror(-spares));
	if (rc == 0)
		rc = al_idle_pool_new(svc->durable, runs_in_flight, svc, &p);
	if (rc == 0 && (rc = al_idle_pool_configure(p, gen->cfg)) < 0) {
		al_idle_pool_free(p);
		p = NULL;
	}
	al_service_gen_put(svc, gen);
	pthread_mutex_lock(&svc->lock);
	svc->idle_sups = p;
	pthread_mutex_unlock(&svc->lock);
	return rc;
}

void al_service_destroy(al_service *svc)
{
	al_compat_repeats_stop(); /* before callbacks: it starts them */
	al_compat_callbacks_stop();
	al_compat_ws_stop();
	al_compat_store_clear();
	al_idle_pool_free(svc->idle_sups);
	svc->idle_sups = NULL;
	al_durable_close(svc->durable);
	svc->durable = NULL;
	/* Only after every worker ended: the table holds the last refs. */
	while (svc->newest != NULL) {
		al_srv_run *run = svc->newest;
		svc->newest = run->older;
		run_free(run);
	}
	al_srv_gen_free(gen_put_locked(svc->gen));
	svc->gen = NULL;
	al_srv_metrics_free(svc->metrics);
	pthread_cond_destroy(&svc->idle);
	pthread_mutex_destroy(&svc->lock);
}

al_srv_gen *al_service_gen_get(al_service *svc)
{
	pthread_mutex_lock(&svc->lock);
	al_srv_gen *gen = svc->gen;
	if (gen != NULL)
		gen->refs++;
	pthread_mutex_unlock(&svc->lock);
	return gen;
}

void al_service_gen_put(al_service *svc, al_srv_gen *gen)
{
	pthread_mutex_lock(&svc->lock);
	al_srv_gen *dead = gen_put_locked(gen);
	pthread_mutex_unlock(&svc->lock);
	al_srv_gen_free(dead);
}

void al_service_gen_set(al_service *svc, al_srv_gen *gen)
{
	gen->refs = 1;
	pthread_mutex_lock(&svc->lock);
	al_srv_gen *dead = gen_put_locked(svc->gen);
	svc->gen = gen;
	al_idle_pool *idle = svc->idle_sups;
	pthread_mutex_unlock(&svc->lock);
	/* Idle supervisors of the old configuration are ended. */
	if (idle != NULL && al_idle_pool_configure(idle, gen->cfg) < 0)
		al_logf(AL_LOG_WARN, NULL,
			"cannot reconfigure the idle supervisors");
	al_srv_gen_free(dead);
}

static void unlink_run_locked(al_service *svc, al_srv_run *run)
{
	if (run->newer != NULL)
		run->newer->older = run->older;
	else
		svc->newest = run->older;
	if (run->older != NULL)
		run->older->newer = run->newer;
	else
		svc->oldest = run->newer;
	run->newer = run->older = NULL;
	svc->n_runs--;
}

/* Lock held; returns true when the caller must free the run. */
static bool run_put_locked(al_srv_run *run)
{
	return --run->refs == 0;
}

void al_service_run_put(al_service *svc, al_srv_run *run)
{
	if (run == NULL)
		return;
	pthread_mutex_lock(&svc->lock);
	bool dead = run_put_locked(run);
	pthread_mutex_unlock(&svc->lock);
	if (dead)
		run_free(run);
}

/* Lock held.  Evicts the oldest finished runs past the table bound and
 * hands them back (linked through ->older) to be released unlocked
 * (release_evicted). */
static al_srv_run *evict_locked(al_service *svc)
{
	al_srv_run *dead = NULL, *run = svc->oldest;
	while (svc->n_runs > svc->max_runs && run != NULL) {
		al_srv_run *newer = run->newer;
		if (run->state == AL_SRV_RUN_DONE) {
			unlink_run_locked(svc, run);
			if (run_put_locked(run)) {
				run->older = dead;
				dead = run;
			}
		}
		run = newer;
	}
	return dead;
}

/* An evicted run leaves only the table: its directory (output, final
 * result) stays readable from disk until retention removes it. */
static void release_evicted(al_srv_run *dead)
{
	while (dead != NULL) {
		al_srv_run *next = dead->older;
		run_free(dead);
		dead = next;
	}
}

void al_service_announce(al_srv_run *run, const char *run_id)
{
	pthread_mutex_lock(&run->svc->lock);
	if (run->run_id[0] == '\0' && run_id != NULL)
		snprintf(run->run_id, sizeof(run->run_id), "%s", run_id);
	pthread_cond_broadcast(&run->changed);
	pthread_mutex_unlock(&run->svc->lock);
}

static void on_run_id(void *ctx, const char *run_id)
{
	al_service_announce(ctx, run_id);
}

/* An al_admit_options claim: the id is free when no run in the table
 * has it or asked for it and no run directory of that name exists (a
 * run an earlier daemon left, or one evicted from the table but not yet
 * removed).  Checked and reserved under the lock, so two requests asking
 * for the same id cannot both have it. */
static int claim_run_id(void *ctx, const char *run_id)
{
	al_srv_run *self = ctx, *run;
	al_service *svc = self->svc;
	struct stat st;
	int rc = 0;
	char *path = al_strdup_printf("%s/" AL_RUNS_DIR "/%s",
				      svc->opts.state_dir, run_id);
	if (path == NULL)
		return -ENOMEM;
	pthread_mutex_lock(&svc->lock);
	for (run = svc->newest; run != NULL && rc == 0; run = run->older)
		if (strcmp(run->run_id, run_id) == 0 ||
		    strcmp(run->claimed_id, run_id) == 0)
			rc = -EEXIST;
	if (rc == 0 && lstat(path, &st) == 0)
		rc = -EEXIST;
	if (rc == 0)
		snprintf(self->claimed_id, sizeof(self->claimed_id), "%s",
			 run_id);
	pthread_mutex_unlock(&svc->lock);
	free(path);
	return rc;
}

static void drop_oldest_event(al_srv_run *run)
{
	run->event_bytes -= run->events[0].len;
	free(run->events[0].data);
	memmove(run->events, run->events + 1,
		(run->n_events - 1) * sizeof(*run->events));
	run->n_events--;
}

void al_service_output(void *ctx, int stream, const unsigned char *data,
		       size_t len)
{
	al_srv_run *run = ctx;
	if (stream == AL_OUTLOG_BUILD) {
		/* kept beside the events: only the compat WebSocket reads it */
		char *copy = len > 0 && len <= AL_OUTLOG_MAX_CHUNK
				     ? strndup((const char *)data, len)
				     : NULL;
		if (copy == NULL)
			return;
		pthread_mutex_lock(&run->svc->lock);
		free(run->build_stage);
		run->build_stage = copy;
		pthread_cond_broadcast(&run->changed);
		pthread_mutex_unlock(&run->svc->lock);
		return;
	}
	if (len == 0 || (stream != AL_STDOUT && stream != AL_STDERR &&
			 stream != AL_OUTLOG_EVENT))
		return;
	if (len > AL_SRV_MAX_EVENT_BYTES)
		len = AL_SRV_MAX_EVENT_BYTES;
	unsigned char *copy = malloc(len);
	if (copy == NULL)
		return; /* the result still carries the output */
	memcpy(copy, data, len);
	pthread_mutex_lock(&run->svc->lock);
	while (run->n_events > 0 &&
	       (run->n_events >= AL_SRV_MAX_EVENTS ||
		run->event_bytes + len > AL_SRV_MAX_EVENT_BYTES))
		drop_oldest_event(run);
	if (run->n_events == run->cap_events) {
		size_t cap = run->cap_events ? run->cap_events * 2 : 16;
		al_srv_event *ev = realloc(run->events, cap * sizeof(*ev));
		if (ev == NULL) {
			pthread_mutex_unlock(&run->svc->lock);
			free(copy);
			return;
		}
		run->events = ev;
		run->cap_events = cap;
	}
	run->events[run->n_events++] = (al_srv_event){
		.seq = run->next_seq++, .stream = stream, .data = copy,
		.len = len};
	run->event_bytes += len;
	pthread_cond_broadcast(&run->changed);
	pthread_mutex_unlock(&run->svc->lock);
}

/* ---- reading what a run left (docs/api.md, "Reading a run") -------- */

/* A finished run's recovery record is small (its request is dropped when
 * it ends); only a live run's may carry a large request. */
#define OWNER_RECORD_MAX (1024u * 1024u)

/* The run's directory, opened when its durable record names tenant as
 * the owner: 0, -ENOENT (no such run, another tenant's, an unreadable
 * record: all alike), -EFBIG (the record still holds a live run's
 * request: not read). */
static int open_owned_dir(al_service *svc, const char *tenant,
			  const char *run_id, int *dirfd)
{
	int runs = -1, d = -1;
	struct stat st;
	*dirfd = -1;
	if (!al_run_id_valid(run_id))
		return -ENOENT;
	int rc = al_runs_dir_open(svc->opts.state_dir, &runs);
	if (rc == 0)
		rc = al_run_dir_open(runs, run_id, false, &d);
	if (runs >= 0)
		close(runs);
	if (rc < 0)
		return -ENOENT;
	if (fstatat(d, AL_RF_RECOVERY, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode)) {
		rc = -ENOENT;
	} else if (st.st_size > (off_t)OWNER_RECORD_MAX) {
		rc = -EFBIG;
	} else {
		al_recovery rec;
		memset(&rec, 0, sizeof(rec));
		if (al_recovery_read(d, run_id, &rec) < 0 ||
		    rec.tenant == NULL || strcmp(rec.tenant, tenant) != 0)
			rc = -ENOENT;
		al_recovery_clear(&rec);
	}
	if (rc < 0)
		close(d);
	else
		*dirfd = d;
	return rc;
}

/* run: the table's entry for run_id of this tenant, or NULL.  A run
 * that has a directory is owned as its record says; one the table knows
 * without a directory (refused before it was persisted: its id is new)
 * by the table.  A record still holding a large request (a live run) is
 * not read: the table's entry for that run was made with the directory
 * (mkdir, exclusive, of an id never used before). */
int al_service_owns(al_service *svc, const char *tenant, const char *run_id,
		    al_srv_run *run)
{
	bool has_dir = true;
	if (run != NULL) {
		pthread_mutex_lock(&svc->lock);
		has_dir = run->has_dir;
		pthread_mutex_unlock(&svc->lock);
		if (!has_dir)
			return 0;
	}
	int d = -1;
	int rc = open_owned_dir(svc, tenant, run_id, &d);
	if (d >= 0)
		close(d);
	if (rc == -EFBIG)
		return run != NULL ? 0 : -ENOENT;
	return rc;
}

int al_service_stored_result(al_service *svc, const char *tenant,
			     const char *run_id, al_srv_run *run,
			     al_srv_stored *out)
{
	bool has_dir = true;
	char *mem = NULL;
	out->text = NULL;
	out->fd = -1;
	out->size = 0;
	if (run != NULL) {
		pthread_mutex_lock(&svc->lock);
		has_dir = run->has_dir;
		bool copy = run->state == AL_SRV_RUN_DONE &&
			    run->result_json != NULL;
		mem = copy ? strdup(run->result_json) : NULL;
		pthread_mutex_unlock(&svc->lock);
		if (copy && mem == NULL)
			return -ENOMEM;
		if (!has_dir) {
			out->text = mem;
			return mem != NULL ? 0 : -ENOENT;
		}
	}
	int d = -1;
	int rc = open_owned_dir(svc, tenant, run_id, &d);
	if (rc == -EFBIG && run != NULL) {
		/* Finished, but its request could not be dropped: the
		 * table's entry was made with the directory. */
		int runs = -1;
		rc = al_runs_dir_open(svc->opts.state_dir, &runs);
		if (rc == 0)
			rc = al_run_dir_open(runs, run_id, false, &d);
		if (runs >= 0)
			close(runs);
	}
	if (rc < 0) {
		/* Not this tenant's, or forgotten (retention). */
		free(mem);
		return -ENOENT;
	}
	struct stat st;
	int fd = openat(d, AL_RF_FINAL, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(d);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		free(mem);
		out->fd = fd;
		out->size = (uint64_t)st.st_size;
		return 0;
	}
	if (fd >= 0)
		close(fd);
	/* The final record could not be written: the table's copy. */
	out->text = mem;
	return mem != NULL ? 0 : -ENOENT;
}

void al_srv_stored_clear(al_srv_stored *s)
{
	free(s->text);
	s->text = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

/* true when the run's final.json holds exactly len bytes: the result the
 * daemon wrote there, which reads then take from the disk. */
static bool final_on_disk(al_service *svc, const char *run_id, size_t len)
{
	int runs = -1, d = -1;
	struct stat st;
	bool same = false;
	if (al_runs_dir_open(svc->opts.state_dir, &runs) == 0 &&
	    al_run_dir_open(runs, run_id, false, &d) == 0)
		same = fstatat(d, AL_RF_FINAL, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		       S_ISREG(st.st_mode) && (uint64_t)st.st_size == len;
	if (d >= 0)
		close(d);
	if (runs >= 0)
		close(runs);
	return same;
}

void al_service_publish(al_service *svc, al_srv_run *run, char *json,
			unsigned status, al_outcome outcome)
{
	pthread_mutex_lock(&svc->lock);
	bool has_dir = run->has_dir;
	char run_id[40];
	snprintf(run_id, sizeof(run_id), "%s", run->run_id);
	pthread_mutex_unlock(&svc->lock);
	/* A result on disk is read from there: the table holds no copy of
	 * a run's output (docs/api.md, "Reading a run"). */
	if (json != NULL && has_dir && run_id[0] != '\0' &&
	    final_on_disk(svc, run_id, strlen(json))) {
		free(json);
		json = NULL;
	}
	pthread_mutex_lock(&svc->lock);
	/* A finished run keeps only the tail of its live output for late
	 * subscribers (the result carries all of it): the table does not
	 * pin every listed run's output. */
	while (run->n_events > 0 &&
	       run->event_bytes > AL_SRV_DONE_EVENT_BYTES)
		drop_oldest_event(run);
	if (run->n_events == 0) {
		free(run->events);
		run->events = NULL;
		run->cap_events = 0;
	} else if (run->n_events < run->cap_events) {
		al_srv_event *ev =
			realloc(run->events, run->n_events * sizeof(*ev));
		if (ev != NULL) {
			run->events = ev;
			run->cap_events = run->n_events;
		}
	}
	run->result_json = json;
	run->status = status;
	run->outcome = outcome;
	run->state = AL_SRV_RUN_DONE;
	free(run->body);
	run->body = NULL;
	/* A finished run keeps no descriptor: the table remembers 4096
	 * runs, and a cancel token per remembered run exhausted the
	 * descriptor limit. */
	al_cancel *cancel = run->cancel;
	run->cancel = NULL;
	al_srv_gen *dead_gen = gen_put_locked(run->gen);
	run->gen = NULL;
	svc->active--;
	pthread_cond_broadcast(&run->changed);
	bool dead = run_put_locked(run);
	svc->workers--;
	pthread_cond_broadcast(&svc->idle);
	pthread_mutex_unlock(&svc->lock);
	al_cancel_free(cancel);
	al_srv_gen_free(dead_gen);
	if (dead)
		run_free(run);
}

/* al_admit_options.check_continues: the durable runs on disk decide. */
static int continues_check(void *ctx, const char *tenant, const char *run_id)
{
	al_service *svc = ctx;
	return al_carry_check(svc->durable, run_id, tenant);
}

static void *worker(void *arg)
{
	al_srv_run *run = arg;
	al_service *svc = run->svc;
	al_host_context hc = {.tenant = run->tenant,
			      .principal = run->principal};
	al_run_options ro = {.on_output = al_service_output,
			     .on_output_ctx = run,
			     .cancel = run->cancel,
			     .on_run_id = on_run_id,
			     .on_run_id_ctx = run};
	al_admit_options ao = {
		.run_id = run->asked_run_id,
		.claim_run_id = claim_run_id,
		.claim_ctx = run,
		.forwarded_env = run->forwarded_env,
		.traceparent = run->traceparent[0] ? run->traceparent : NULL,
		.check_continues = continues_check,
		.continues_ctx = svc};
	al_admission *adm = NULL;
	al_result *res = NULL;
	char *json = NULL;
	unsigned status = 500;
	al_outcome outcome = AL_OUTCOME_UNAVAILABLE;
	al_durable_giveback gb = {.sup = NULL, .dr = NULL};

	int rc = al_host_admit_json_ex(run->gen->host, &hc, run->body,
				       run->body_len, &ro, &ao, &adm, &res);
	/* The admission holds its own copies now. */
	drop_headers(run);
	if (rc == 0 && adm != NULL) {
		/* Admitted: its supervisor runs it (docs/durability.md). */
		json = al_durable_execute(run, adm, &status, &outcome, &gb);
	} else if (rc == 0 && res != NULL) {
		json = al_result_to_json(res, 0);
		status = al_srv_status_for(res->outcome, res->reason);
		outcome = res->outcome;
		pthread_mutex_lock(&svc->lock);
		if (run->run_id[0] == '\0')
			snprintf(run->run_id, sizeof(run->run_id), "%s",
				 res->run_id);
		pthread_mutex_unlock(&svc->lock);
	}
	if (json == NULL) {
		json = strdup("{\"error\":\"internal\",\"message\":\"the run "
			      "produced no result\"}");
		status = 500;
		outcome = AL_OUTCOME_UNAVAILABLE;
	}
	al_result_free(res);
	/* The give-back below still uses the service: this thread stays
	 * counted as a worker until it is done. */
	bool give_back = gb.sup != NULL || gb.lend.active || gb.dr != NULL;
	if (give_back) {
		pthread_mutex_lock(&svc->lock);
		svc->workers++;
		pthread_mutex_unlock(&svc->lock);
	}
	al_service_publish(svc, run, json, status, outcome);
	if (give_back) {
		/* Answered: now its supervisor may come back for the next
		 * run. */
		al_durable_give_back(svc, &gb);
		pthread_mutex_lock(&svc->lock);
		svc->workers--;
		pthread_cond_broadcast(&svc->idle);
		pthread_mutex_unlock(&svc->lock);
	}
	return NULL;
}

int al_service_submit(al_service *svc, al_srv_gen *gen, const char *tenant,
		      const char *principal, const char *body, size_t len,
		      const al_srv_submit_headers *hdrs, al_srv_run **out)
{
	al_srv_run *run = calloc(1, sizeof(*run)), *dead = NULL;
	pthread_attr_t attr;
	pthread_t tid;
	int rc;

	*out = NULL;
	if (run == NULL)
		return -ENOMEM;
	pthread_cond_init(&run->changed, NULL);
	run->svc = svc;
	run->created_ms = al_now_ms();
	snprintf(run->principal, sizeof(run->principal), "%s",
		 principal ? principal : "");
	run->tenant = strdup(tenant);
	run->cancel = al_cancel_new();
	run->body = malloc(len + 1);
	if (run->tenant == NULL || run->cancel == NULL || run->body == NULL ||
	    (hdrs && hdrs->run_id &&
	     (run->asked_run_id = strdup(hdrs->run_id)) == NULL) ||
	    (hdrs && hdrs->forwarded_env &&
	     (run->forwarded_env = strdup(hdrs->forwarded_env)) == NULL)) {
		run_free(run);
		return -ENOMEM;
	}
	run->stdin_stream = hdrs && hdrs->stdin_stream;
	if (hdrs && hdrs->traceparent)
		snprintf(run->traceparent, sizeof(run->traceparent), "%s",
			 hdrs->traceparent);
	memcpy(run->body, body, len);
	run->body[len] = '\0';
	run->body_len = len;

	pthread_mutex_lock(&svc->lock);
	if (svc->draining) {
		pthread_mutex_unlock(&svc->lock);
		run_free(run);
		return -ESHUTDOWN;
	}
	gen->refs++;
	run->gen = gen;
	run->refs = 3; /* table, worker, caller */
	run->older = svc->newest;
	if (svc->newest != NULL)
		svc->newest->newer = run;
	else
		svc->oldest = run;
	svc->newest = run;
	svc->n_runs++;
	svc->active++;
	svc->workers++;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = -pthread_create(&tid, &attr, worker, run);
	pthread_attr_destroy(&attr);
	if (rc < 0) {
		unlink_run_locked(svc, run);
		svc->active--;
		svc->workers--;
		al_srv_gen *dead_gen = gen_put_locked(gen);
		pthread_mutex_unlock(&svc->lock);
		al_srv_gen_free(dead_gen);
		run_free(run);
		return -EAGAIN;
	}
	dead = evict_locked(svc);
	pthread_mutex_unlock(&svc->lock);
	release_evicted(dead);
	*out = run;
	return 0;
}

al_srv_run *al_service_insert(al_service *svc, al_srv_gen *gen,
			      const char *run_id, const char *tenant,
			      const char *principal, int64_t created_ms,
			      bool running)
{
	al_srv_run *run = calloc(1, sizeof(*run)), *dead;
	if (run == NULL)
		return NULL;
	pthread_cond_init(&run->changed, NULL);
	run->svc = svc;
	run->created_ms = created_ms;
	run->has_dir = true;
	snprintf(run->run_id, sizeof(run->run_id), "%s", run_id);
	snprintf(run->principal, sizeof(run->principal), "%s",
		 principal ? principal : "");
	run->tenant = strdup(tenant);
	/* Only a live run can be interrupted. */
	run->cancel = running ? al_cancel_new() : NULL;
	if (run->tenant == NULL || (running && run->cancel == NULL)) {
		run_free(run);
		return NULL;
	}
	pthread_mutex_lock(&svc->lock);
	run->refs = 2; /* table, caller */
	run->state = running ? AL_SRV_RUN_RUNNING : AL_SRV_RUN_DONE;
	if (running) {
		gen->refs++;
		run->gen = gen;
		svc->active++;
	}
	/* Kept in creation order, newest first. */
	al_srv_run *after = NULL, *cur = svc->newest;
	while (cur != NULL && cur->created_ms > created_ms) {
		after = cur;
		cur = cur->older;
	}
	run->newer = after;
	run->older = cur;
	if (after != NULL)
		after->older = run;
	else
		svc->newest = run;
	if (cur != NULL)
		cur->newer = run;
	else
		svc->oldest = run;
	svc->n_runs++;
	dead = evict_locked(svc);
	pthread_mutex_unlock(&svc->lock);
	release_evicted(dead);
	return run;
}

void al_service_wait(al_service *svc, al_srv_run *run, bool wait_done)
{
	pthread_mutex_lock(&svc->lock);
	while (run->state != AL_SRV_RUN_DONE && !svc->closing &&
	       (wait_done || run->run_id[0] == '\0'))
		pthread_cond_wait(&run->changed, &svc->lock);
	pthread_mutex_unlock(&svc->lock);
}

al_srv_run *al_service_find(al_service *svc, const char *tenant,
			    const char *run_id)
{
	al_srv_run *run;
	pthread_mutex_lock(&svc->lock);
	for (run = svc->newest; run != NULL; run = run->older)
		if (run->run_id[0] != '\0' &&
		    strcmp(run->run_id, run_id) == 0 &&
		    strcmp(run->tenant, tenant) == 0)
			break;
	if (run != NULL)
		run->refs++;
	pthread_mutex_unlock(&svc->lock);
	return run;
}

/* The run's durable handle for an HTTP thread (NULL when none); give it
 * back with drun_put. */
static al_drun *drun_get_locked(al_srv_run *run)
{
	if (run->drun != NULL)
		run->drun_users++;
	return run->drun;
}

static void drun_put(al_service *svc, al_srv_run *run)
{
	pthread_mutex_lock(&svc->lock);
	run->drun_users--;
	pthread_cond_broadcast(&run->changed);
	pthread_mutex_unlock(&svc->lock);
}

/* Fires a live run's cancel token (a finished run has none). */
static void fire_cancel(al_service *svc, al_srv_run *run)
{
	pthread_mutex_lock(&svc->lock);
	al_cancel_fire(run->cancel, AL_CANCEL_INTERRUPTED);
	pthread_mutex_unlock(&svc->lock);
}

int al_service_interrupt(al_service *svc, al_srv_run *run, bool stop)
{
	pthread_mutex_lock(&svc->lock);
	if (run->state == AL_SRV_RUN_DONE) {
		pthread_mutex_unlock(&svc->lock);
		return -EALREADY;
	}
	/* Before its supervisor is started only the token reaches it; its
	 * records may exist already, and say whether a newer daemon owns
	 * it (one adopted while this one stood still mid-launch). */
	al_drun *dr = drun_get_locked(run);
	bool launched = run->launched;
	if (stop && !run->stop_requested) {
		run->stop_requested = true;
		run->stop_at_ms = al_now_ms();
	}
	pthread_mutex_unlock(&svc->lock);

	int rc = 0;
	if (dr != NULL) {
		rc = !launched ? (al_drun_superseded(dr) ? -EPERM : 0)
			       : al_drun_control(dr, stop ? AL_CONTROL_STOP
							  : AL_CONTROL_INTERRUPT);
		drun_put(svc, run);
		if (rc == -EPERM) {
			/* A newer daemon owns it: no stop to escalate. */
			pthread_mutex_lock(&svc->lock);
			run->stop_requested = false;
			pthread_mutex_unlock(&svc->lock);
			return -EPERM;
		}
		/* -ESRCH: it ended meanwhile; its result is on the way. */
		rc = 0;
	}
	/* The token also stops one still waiting for a slot, and one whose
	 * supervisor is being launched (checked right after).  Under the
	 * lock: the run may have finished meanwhile, its token freed. */
	fire_cancel(svc, run);
	return rc;
}

int al_service_deliver(al_service *svc, al_srv_run *run, const char *id,
		       const char *event_json)
{
	pthread_mutex_lock(&svc->lock);
	/* The inbox exists from the moment the run is persisted (before its
	 * id is handed out); a run whose handle is retired is ending. */
	bool done = run->state == AL_SRV_RUN_DONE || (run->launched &&
						      run->drun == NULL);
	al_drun *dr = done ? NULL : drun_get_locked(run);
	pthread_mutex_unlock(&svc->lock);
	if (done)
		return -EALREADY;
	if (dr == NULL)
		return -EAGAIN;
	int rc = al_drun_deliver(dr, id, event_json);
	drun_put(svc, run);
	return rc;
}

void al_service_interrupt_all(al_service *svc)
{
	for (;;) {
		al_srv_run *run;
		pthread_mutex_lock(&svc->lock);
		for (run = svc->newest; run != NULL; run = run->older)
			if (run->state != AL_SRV_RUN_DONE &&
			    al_cancel_state(run->cancel) == AL_CANCEL_NONE)
				break;
		if (run != NULL)
			run->refs++;
		pthread_mutex_unlock(&svc->lock);
		if (run == NULL)
			return;
		/* A run a newer daemon owns is not ours to interrupt. */
		if (al_service_interrupt(svc, run, false) == -EPERM)
			fire_cancel(svc, run);
		al_service_run_put(svc, run);
	}
}

void al_service_set_language(al_service *svc, al_srv_run *run,
			     const char *language)
{
	pthread_mutex_lock(&svc->lock);
	snprintf(run->language, sizeof(run->language), "%s",
		 language != NULL ? language : "");
	pthread_mutex_unlock(&svc->lock);
}

int al_service_list(al_service *svc, const char *tenant, size_t limit,
		    const char *after, const al_run_filter *filter,
		    char **out)
{
	json_t *doc = json_object(), *arr = json_array();
	al_srv_run *run;
	const char *last = NULL;
	char ts[40];
	int rc = 0;
	size_t n = 0;
	bool more = false;

	*out = NULL;
	if (doc == NULL || arr == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	/* A finished run whose directory retention removed is forgotten:
	 * not listed, though the table still holds it. */
	int runs = -1;
	if (al_runs_dir_open(svc->opts.state_dir, &runs) < 0)
		runs = -1;
	pthread_mutex_lock(&svc->lock);
	run = svc->newest;
	if (after != NULL) {
		for (; run != NULL; run = run->older)
			if (strcmp(run->run_id, after) == 0 &&
			    strcmp(run->tenant, tenant) == 0)
				break;
		if (run == NULL)
			rc = -ENOENT;
		else
			run = run->older;
	}
	for (; rc == 0 && run != NULL; run = run->older) {
		struct stat st;
		if (run->run_id[0] == '\0' || strcmp(run->tenant, tenant) != 0)
			continue;
		if (!al_run_filter_match(filter, run->state == AL_SRV_RUN_DONE,
					 run->outcome, run->language,
					 run->created_ms))
			continue;
		if (runs >= 0 && run->has_dir &&
		    run->state == AL_SRV_RUN_DONE &&
		    fstatat(runs, run->run_id, &st, AT_SYMLINK_NOFOLLOW) < 0 &&
		    errno == ENOENT)
			continue;
		if (n == limit) {
			more = true;
			break;
		}
		al_format_time_ms(run->created_ms, ts, sizeof(ts));
		json_t *item = json_pack(
			"{s:s, s:s, s:s}", "run_id", run->run_id, "state",
			run->state == AL_SRV_RUN_DONE ? "finished" : "running",
			"created_at", ts);
		if (item != NULL && run->state == AL_SRV_RUN_DONE)
			json_object_set_new(
				item, "outcome",
				json_string(al_outcome_name(run->outcome)));
		if (item != NULL && run->language[0] != '\0')
			json_object_set_new(item, "language",
					    json_string(run->language));
		if (item == NULL || json_array_append_new(arr, item) < 0) {
			rc = -ENOMEM;
			break;
		}
		last = run->run_id;
		n++;
	}
	if (rc == 0)
		rc = json_object_set_new(doc, "next_after",
					 more && last ? json_string(last)
						      : json_null()) < 0
			     ? -ENOMEM
			     : 0;
	pthread_mutex_unlock(&svc->lock);
	if (runs >= 0)
		close(runs);
	if (rc < 0)
		goto out;
	if (json_object_set(doc, "runs", arr) < 0 ||
	    (*out = json_dumps(doc, JSON_COMPACT)) == NULL)
		rc = -ENOMEM;
out:
	json_decref(arr);
	json_decref(doc);
	return rc;
}
