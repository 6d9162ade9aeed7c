/* A node of a fleet (docs/scale-out.md): claims queued runs from the
 * store, runs each through this node's own durable pipeline under the id
 * the store gave it, copies its live output and result back to the store,
 * forwards control requests made at other nodes, and keeps its lease.
 *
 * Exactly once: a run is claimed by one UPDATE (state queued -> running,
 * node = us) and settled by one UPDATE (running -> finished) that only
 * matches while the run is still ours, so a node whose lease ran out (and
 * whose runs another node settled as lost) cannot record a second
 * outcome.  Nothing ever moves a run back to queued: a claimed run that
 * this node cannot account for after a restart is recorded lost, never
 * run again. */
#include "server/fleet.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <airlock/json.h>

#include "core/log.h"
#include "core/util.h"
#include "server/fleet_internal.h"
#include "server/node_process.h"
#include "cgroup/cgroup.h"
#include "server/service.h"
#include "supervisor/control.h"
#include "supervisor/identity.h"
#include "supervisor/inbox.h"
#include "supervisor/outlog.h"
#include "supervisor/record_file.h"
#include "supervisor/run_records.h"

#define DEFAULT_LEASE_MS 5000u

typedef struct job {
	al_fleet *f;
	al_store_run r;
	al_srv_run *run; /* attached at a restart, else NULL */
	/* An adopted run: the dead node's state directory, whose
	 * supervisor is watched; else NULL. */
	char *adopted_dir;
	char *fwd_env; /* a pinned run's forwarded environment, or NULL */
} job;

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* The claimed runs' ids; under f->lock.  Adding grows f->executing. */
static int ids_add_locked(al_fleet *f, const char *id)
{
	if (f->executing == f->cap_ids) {
		size_t cap = f->cap_ids ? f->cap_ids * 2 : 16;
		char(*v)[40] = realloc(f->ids, cap * sizeof(*v));
		if (v == NULL)
			return -ENOMEM;
		f->ids = v;
		f->cap_ids = cap;
	}
	snprintf(f->ids[f->executing++], 40, "%s", id);
	return 0;
}

static void ids_del_locked(al_fleet *f, const char *id)
{
	for (unsigned i = 0; i < f->executing; i++)
		if (strcmp(f->ids[i], id) == 0) {
			memcpy(f->ids[i], f->ids[f->executing - 1], 40);
			break;
		}
	f->executing--;
}

static bool ids_has_locked(const al_fleet *f, const char *id)
{
	for (unsigned i = 0; i < f->executing; i++)
		if (strcmp(f->ids[i], id) == 0)
			return true;
	return false;
}

int al_fleet_pin_add(al_fleet *f, const char *run_id, const char *env)
{
	char *copy = strdup(env);
	if (copy == NULL)
		return -ENOMEM;
	pthread_mutex_lock(&f->lock);
	/* One pin per id: a second submission of a caller-chosen id here
	 * must never leave its environment for the first one's run. */
	for (size_t i = 0; i < f->n_pins; i++)
		if (strcmp(f->pins[i].run_id, run_id) == 0) {
			pthread_mutex_unlock(&f->lock);
			al_explicit_free_str(copy);
			return -EADDRINUSE;
		}
	if (f->n_pins == f->cap_pins) {
		size_t cap = f->cap_pins ? f->cap_pins * 2 : 8;
		struct al_fleet_pin *v = realloc(f->pins, cap * sizeof(*v));
		if (v == NULL) {
			pthread_mutex_unlock(&f->lock);
			al_explicit_free_str(copy);
			return -ENOMEM;
		}
		f->pins = v;
		f->cap_pins = cap;
	}
	snprintf(f->pins[f->n_pins].run_id, 40, "%s", run_id);
	f->pins[f->n_pins++].env = copy;
	pthread_mutex_unlock(&f->lock);
	return 0;
}

char *al_fleet_pin_take(al_fleet *f, const char *run_id)
{
	char *env = NULL;
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; i < f->n_pins; i++)
		if (strcmp(f->pins[i].run_id, run_id) == 0) {
			env = f->pins[i].env;
			f->pins[i] = f->pins[--f->n_pins];
			break;
		}
	pthread_mutex_unlock(&f->lock);
	return env;
}

static bool abandoned(al_fleet *f)
{
	pthread_mutex_lock(&f->lock);
	bool a = f->abandon;
	pthread_mutex_unlock(&f->lock);
	return a;
}

unsigned al_fleet_status_of(const char *result)
{
	json_t *o = json_loads(result, 0, NULL);
	al_outcome oc;
	unsigned st = 200;
	const char *name = json_string_value(json_object_get(o, "outcome"));
	if (name != NULL && al_outcome_from_name(name, &oc) == 0)
		st = al_srv_status_for(
			oc, json_string_value(json_object_get(o, "reason")));
	json_decref(o);
	return st;
}

/* Records the run's outcome in the store, retrying while the store is
 * unreachable (a restart of PostgreSQL): the result waits in memory. */
static void record(al_fleet *f, const char *run_id, unsigned status,
		   const char *outcome, const char *result)
{
	unsigned backoff = 100;
	bool told = false;
	for (;;) {
		int rc = f->st->ops->finish(f->st, f->node, run_id, status,
					    outcome, result);
		if (rc == 1)
			return;
		if (rc == 0) {
			al_logf(AL_LOG_WARN, run_id,
				"the store had already settled this run "
				"(this node's lease ran out); its result here "
				"is not recorded");
			return;
		}
		if (rc != -EAGAIN || abandoned(f)) {
			al_logf(AL_LOG_ERROR, run_id,
				"cannot record the run's result in the store: "
				"%s",
				strerror(-rc));
			return;
		}
		if (!told)
			al_logf(AL_LOG_WARN, run_id,
				"the store is unreachable; retrying to record "
				"the result");
		told = true;
		sleep_ms(backoff);
		backoff = backoff < 2000 ? backoff * 2 : 2000;
	}
}

static void record_lost(al_fleet *f, const char *run_id, const char *detail)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "run_id", run_id,
			      "outcome", "unavailable", "reason", "lost",
			      "detail", detail);
	char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (text != NULL)
		record(f, run_id, 503, "unavailable", text);
	free(text);
}

/* ---- following a local run ------------------------------------------- */

typedef struct pending_ev {
	uint64_t seq;
	int stream;
	unsigned char *data;
	size_t len;
} pending_ev;

typedef struct control_ctx {
	al_service *svc;
	al_srv_run *run;
} control_ctx;

static void apply_control(void *ctx, const char *kind, const char *event_id,
			  const char *event)
{
	control_ctx *c = ctx;
	if (strcmp(kind, "inbox") == 0) {
		if (event_id == NULL || event == NULL)
			return;
		/* Not launched yet: the supervisor takes events once it
		 * runs (bounded wait). */
		for (int i = 0; i < 200; i++) {
			if (al_service_deliver(c->svc, c->run, event_id,
					       event) != -EAGAIN)
				return;
			sleep_ms(25);
		}
		return;
	}
	bool stop = strcmp(kind, "stop") == 0;
	for (int i = 0; i < 200; i++) {
		int rc = al_service_interrupt(c->svc, c->run, stop);
		if (rc != -EAGAIN)
			return;
		sleep_ms(25);
	}
}

/* Copies the run's output to the store as it comes and forwards control
 * requests, until the run is done.  false when the service closed first
 * (the run is left for this node's next start). */
static bool follow(al_fleet *f, al_srv_run *run, const char *run_id)
{
	al_service *svc = f->svc;
	uint64_t next = 0, seen = 0;
	bool told_language = false;
	control_ctx cc = {svc, run};
	(void)f->st->ops->control_take(f->st, run_id, apply_control, &cc);
	for (;;) {
		pending_ev *evs = NULL;
		size_t n = 0;
		bool done, closing;
		pthread_mutex_lock(&svc->lock);
		if (next >= run->next_seq && run->state != AL_SRV_RUN_DONE &&
		    !svc->closing) {
			struct timespec dl;
			al_deadline(CLOCK_REALTIME, &dl, 250);
			pthread_cond_timedwait(&run->changed, &svc->lock, &dl);
		}
		uint64_t first = run->next_seq - run->n_events;
		if (next < first)
			next = first;
		if (run->next_seq > next)
			evs = calloc(run->next_seq - next, sizeof(*evs));
		for (; evs != NULL && next < run->next_seq; next++) {
			const al_srv_event *ev = &run->events[next - first];
			pending_ev *p = &evs[n];
			p->data = malloc(ev->len ? ev->len : 1);
			if (p->data == NULL)
				break;
			memcpy(p->data, ev->data, ev->len);
			p->len = ev->len;
			p->seq = ev->seq;
			p->stream = ev->stream;
			n++;
		}
		done = run->state == AL_SRV_RUN_DONE;
		closing = svc->closing;
		char language[sizeof(run->language)];
		memcpy(language, run->language, sizeof(language));
		pthread_mutex_unlock(&svc->lock);
		/* Admitted: the fleet's list shows and filters its language. */
		if (!told_language && language[0] != '\0')
			told_language = f->st->ops->set_language(
						f->st, f->node, run_id,
						language) == 0;
		for (size_t i = 0; i < n; i++) {
			for (int t = 0; t < 50; t++) {
				if (f->st->ops->events_append(
					    f->st, run_id, evs[i].seq,
					    evs[i].stream, evs[i].data,
					    evs[i].len) != -EAGAIN)
					break;
				sleep_ms(200);
			}
			free(evs[i].data);
		}
		free(evs);
		uint64_t before = seen;
		f->st->ops->wait(f->st, false, &seen, 0);
		if (seen != before)
			(void)f->st->ops->control_take(f->st, run_id,
						       apply_control, &cc);
		if (done)
			return true;
		if (closing)
			return false;
	}
}

static char *read_all(int fd, uint64_t size)
{
	char *buf = malloc(size + 1);
	size_t got = 0;
	while (buf != NULL && got < size) {
		ssize_t n = read(fd, buf + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return NULL;
		}
		got += (size_t)n;
	}
	if (buf != NULL)
		buf[got] = '\0';
	return buf;
}

static int copy_fd(int in, int out)
{
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return fsync(out) < 0 ? -errno : 0;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return -errno;
			off += w;
		}
	}
}

/* Copies the run's artifacts (STATE_DIR/artifacts/<run>/) to the shared
 * root, each file whole (a temp name, synced, renamed), before the result
 * is recorded: once a result is visible its artifacts are readable from
 * every node.  Links and anything not a regular file are skipped. */
static void share_artifacts(al_fleet *f, const char *run_id)
{
	char path[4200];
	if (f->artifacts_root == NULL || strchr(run_id, '/') != NULL)
		return;
	snprintf(path, sizeof(path), "%s/artifacts/%s",
		 f->svc->opts.state_dir, run_id);
	int src = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (src < 0)
		return; /* no artifacts */
	snprintf(path, sizeof(path), "%s/artifacts/%s", f->artifacts_root,
		 run_id);
	int dst = -1;
	if (mkdir(path, 0700) == 0 || errno == EEXIST)
		dst = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					 O_CLOEXEC);
	int dup_src = dst >= 0 ? dup(src) : -1;
	DIR *d = dup_src >= 0 ? fdopendir(dup_src) : NULL;
	if (d == NULL && dup_src >= 0)
		close(dup_src);
	bool ok = d != NULL;
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		int in = openat(src, e->d_name,
				O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat st;
		if (in < 0 || fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
			if (in >= 0)
				close(in);
			continue;
		}
		char tmp[300];
		snprintf(tmp, sizeof(tmp), ".%s.tmp", e->d_name);
		(void)unlinkat(dst, tmp, 0);
		int out = openat(dst, tmp,
				 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					 O_CLOEXEC,
				 0600);
		int rc = out < 0 ? -errno : copy_fd(in, out);
		close(in);
		if (out >= 0)
			close(out);
		if (rc == 0 && renameat(dst, tmp, dst, e->d_name) < 0)
			rc = -errno;
		if (rc < 0) {
			(void)unlinkat(dst, tmp, 0);
			ok = false;
		}
	}
	if (d != NULL)
		closedir(d);
	if (dst >= 0) {
		(void)fsync(dst);
		close(dst);
	}
	close(src);
	if (!ok)
		al_logf(AL_LOG_WARN, run_id,
			"fleet: cannot copy the run's artifacts to the shared "
			"directory");
}

/* Records a run of the local table that is done. */
static void record_local(al_fleet *f, al_srv_run *run, const char *run_id,
			 const char *tenant)
{
	al_service *svc = f->svc;
	pthread_mutex_lock(&svc->lock);
	unsigned status = run->status;
	al_outcome outcome = run->outcome;
	pthread_mutex_unlock(&svc->lock);
	al_srv_stored st;
	char *text = NULL;
	if (al_service_stored_result(svc, tenant, run_id, run, &st) == 0) {
		if (st.fd >= 0)
			text = read_all(st.fd, st.size);
		else {
			text = st.text;
			st.text = NULL;
		}
		al_srv_stored_clear(&st);
	}
	if (text == NULL) {
		record_lost(f, run_id, "result_unreadable");
		return;
	}
	share_artifacts(f, run_id);
	record(f, run_id, status, al_outcome_name(outcome), text);
	free(text);
}

static bool stopping(al_fleet *f);
static int spawn(job *j);

/* Records a result text, its outcome and status read from it. */
static void record_text(al_fleet *f, const char *run_id, const char *text)
{
	json_t *r = json_loads(text, 0, NULL);
	const char *oc = json_string_value(json_object_get(r, "outcome"));
	record(f, run_id, al_fleet_status_of(text), oc ? oc : "unavailable",
	       text);
	json_decref(r);
}

/* Control requests for an adopted run, applied to the dead node's run
 * directory the way that node would have: an inbox event is written
 * under the run's lock (the supervisor refuses it once its result is
 * recorded); an interrupt or stop is written with the epoch the run's
 * lease names (the store made this node its owner, and a newer daemon of
 * that directory that took the run over since outranks it) and rung
 * through the verified supervisor's pidfd. */
typedef struct adopted_ctl {
	int dirfd;
	const al_recovery *rec; /* NULL: unreadable, only the inbox works */
	const char *run_id;
	int64_t stop_at; /* a stop passed on (ms), 0: none */
} adopted_ctl;

static void apply_adopted(void *ctx, const char *kind, const char *event_id,
			  const char *event)
{
	adopted_ctl *c = ctx;
	int rc;
	if (strcmp(kind, "inbox") == 0) {
		if (event_id == NULL || event == NULL)
			return;
		int lock = al_record_file_lock_dir(c->dirfd);
		rc = lock < 0 ? lock : al_inbox_deliver(c->dirfd, event_id, event);
		if (lock >= 0)
			close(lock);
	} else {
		uint64_t lease = 0;
		al_identity id;
		rc = c->rec == NULL ? -ESRCH
				    : al_lease_read(c->dirfd, c->rec, &lease);
		if (rc == 0)
			rc = al_control_write(c->dirfd, lease,
					      strcmp(kind, "stop") == 0
						      ? AL_CONTROL_STOP
						      : AL_CONTROL_INTERRUPT);
		if (rc == 0 && (rc = al_identity_read(c->dirfd, &id)) == 0)
			rc = al_identity_signal(&id, c->rec->nonce, SIGUSR1);
		/* A stop is escalated past its grace (watch_adopted). */
		if (rc == 0 && strcmp(kind, "stop") == 0 && c->stop_at == 0)
			c->stop_at = al_now_ms();
	}
	/* -EALREADY, -ESRCH: it ended meanwhile, its result says so. */
	if (rc < 0 && rc != -EALREADY && rc != -ESRCH)
		al_logf(AL_LOG_WARN, c->run_id,
			"fleet: cannot pass a %s to the adopted run: %s", kind,
			strerror(-rc));
}

/* An adopted run's output after its adoption, copied to the store's
 * events as the supervisor appends it to RUN/output.  Records are
 * numbered as every daemon of the run numbers them (outlog.h, and
 * al_service_output: the build stage's record is no event), so the seq
 * of a record is the one the dead node gave it or would have. */
typedef struct adopted_out {
	al_fleet *f;
	const char *run_id;
	int fd;		  /* RUN/output, -1 until it exists */
	uint64_t off;	  /* read up to here */
	uint64_t seq;	  /* the next record's */
	uint64_t stored;  /* the store has every event below this */
} adopted_out;

static int count_stored(void *ctx, uint64_t seq, int stream,
			const unsigned char *data, size_t len)
{
	(void)stream;
	(void)data;
	(void)len;
	adopted_out *o = ctx;
	if (seq != o->stored)
		return 1; /* a gap: appended again from here */
	o->stored++;
	return 0;
}

/* How far the store's events run without a gap (what the dead node got
 * to copy): those are not appended twice. */
static void stored_events(adopted_out *o)
{
	for (;;) {
		uint64_t from = o->stored;
		if (o->f->st->ops->events_read(o->f->st, o->run_id, from,
					       count_stored, o) < 0 ||
		    o->stored == from)
			return;
	}
}

static void adopted_event(void *ctx, int stream, const unsigned char *data,
			  size_t len)
{
	adopted_out *o = ctx;
	if (len == 0 || (stream != AL_STDOUT && stream != AL_STDERR &&
			 stream != AL_OUTLOG_EVENT))
		return;
	uint64_t seq = o->seq++;
	if (seq < o->stored)
		return;
	/* As follow: retried while the store is unreachable, then dropped
	 * (the result still has the output). */
	for (int t = 0; t < 50; t++) {
		if (o->f->st->ops->events_append(o->f->st, o->run_id, seq,
						 stream, data, len) != -EAGAIN)
			break;
		sleep_ms(200);
	}
}

static void adopted_tail(adopted_out *o, int dirfd)
{
	if (o->fd < 0)
		o->fd = openat(dirfd, AL_RF_OUTPUT,
			       O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	/* al_outlog_read stops after a batch of records: until it is
	 * caught up. */
	for (uint64_t before = UINT64_MAX; o->fd >= 0 && before != o->off;) {
		before = o->off;
		if (al_outlog_read(o->fd, &o->off, adopted_event, o) < 0)
			break;
	}
}

/* A stop escalates to killing the tree when the run has not ended this
 * long after it, as on the node that launched the run: the provider's
 * TERM-to-KILL grace plus margin. */
#define STOP_ESCALATE_MS (AL_DEFAULT_GRACE_MS + 2500)
#define KILL_WAIT_MS 10000

/* Ends an adopted run's whole tree, verified: its cgroup (everything it
 * started, the supervisor included), else the verified supervisor. */
static int kill_adopted(int dirfd, const al_recovery *rec)
{
	if (rec->cgroup != NULL)
		return al_run_cgroup_kill_wait(rec->cgroup, KILL_WAIT_MS);
	al_identity id;
	int rc = al_identity_read(dirfd, &id);
	if (rc == 0)
		rc = al_identity_signal(&id, rec->nonce, SIGKILL);
	return rc == -ESRCH ? 0 : rc;
}

/* The result of a stop escalated to a kill, as the launching node makes
 * it: interrupted by signal 9, with the inbox events the program took. */
static void record_killed(al_fleet *f, const char *run_id, int dirfd)
{
	al_result *r = al_result_new();
	char *text = NULL;
	if (r != NULL) {
		snprintf(r->run_id, sizeof(r->run_id), "%s", run_id);
		r->finished_at_ms = al_now_ms();
		r->has_signal = true;
		r->signal = SIGKILL;
		if (al_result_set_outcome(r, AL_OUTCOME_INTERRUPTED, NULL) ==
			    0 &&
		    al_inbox_acked(dirfd, &r->inbox_acked,
				   &r->n_inbox_acked) >= 0 &&
		    al_inbox_result_pending(dirfd, r) >= 0)
			text = al_result_to_json(r, 0);
	}
	al_result_free(r);
	if (text != NULL)
		record_text(f, run_id, text);
	else
		record_lost(f, run_id, "result_unreadable");
	free(text);
}

/* A supervisor gone between syncing its result into the reserve and
 * naming it result.json (docs/durability.md, "The run directory"): the
 * result is taken from the reserve when it is one whole record, read
 * only (the directory is the dead node's to settle). */
static bool adopted_reserve(al_fleet *f, const char *run_id, int d)
{
	char *text = NULL, *canon = NULL;
	size_t len = 0;
	al_result *res = NULL;
	if (al_record_file_read(d, AL_RF_RESERVE, AL_RF_MAX_RECORD, &text,
				&len) == 0 &&
	    al_result_from_json(text, len, &res, NULL) == 0)
		canon = al_result_to_json(res, 0);
	al_result_free(res);
	free(text);
	if (canon == NULL)
		return false;
	record_text(f, run_id, canon);
	free(canon);
	return true;
}

/* A run adopted from a dead node on this host: its supervisor does not
 * die with its daemon, so it is watched in that node's state directory
 * (written only to pass control requests on, apply_adopted) until it
 * records its result — final.json when the dead
 * node got to finish it, else the supervisor's own result.json — or is
 * verified gone without one (lost).  Its output is copied to the store's
 * events meanwhile, and a stop it does not obey within the grace ends
 * its tree.  Only the owning node's restart finishes it there (step 11,
 * its own audit trail).  false: the node is stopping, the run is left
 * for its next start (the store keeps the directory). */
static bool watch_adopted(al_fleet *f, const char *run_id, const char *dir)
{
	int runs = -1, d = -1;
	al_recovery rec = {0};
	bool done = true, killed = false, gave_up = false;
	adopted_out tail = {f, run_id, -1, 0, 0, 0};
	if (dir[0] == '\0' || al_runs_dir_open(dir, &runs) < 0 ||
	    al_run_dir_open(runs, run_id, false, &d) < 0) {
		record_lost(f, run_id, "adoption_failed");
		goto out;
	}
	bool have_rec = al_recovery_read(d, run_id, &rec) == 0;
	/* It was admitted: the list shows its language (a hint). */
	json_t *req = have_rec && rec.request != NULL
			      ? json_loads(rec.request, 0, NULL)
			      : NULL;
	const char *lang =
		json_string_value(json_object_get(req, "language"));
	if (lang != NULL)
		(void)f->st->ops->set_language(f->st, f->node, run_id, lang);
	json_decref(req);
	stored_events(&tail);
	adopted_ctl ac = {d, have_rec ? &rec : NULL, run_id, 0};
	uint64_t seen = UINT64_MAX; /* the first look takes what waits */
	for (bool last = false;;) {
		char *text = NULL;
		size_t len = 0;
		/* Interrupts and inbox events sent at any node (pending ones
		 * from before the adoption too). */
		uint64_t before = seen;
		f->st->ops->wait(f->st, false, &seen, 0);
		if (seen != before)
			(void)f->st->ops->control_take(f->st, run_id,
						       apply_adopted, &ac);
		/* Before the result: its event follows the last output. */
		adopted_tail(&tail, d);
		if (al_record_file_read(d, AL_RF_FINAL, AL_RF_MAX_RECORD, &text,
				  &len) == 0) {
			adopted_tail(&tail, d);
			record_text(f, run_id, text);
			free(text);
			break;
		}
		if (al_record_file_read(d, AL_RF_RESULT, AL_RF_MAX_RECORD, &text,
				  &len) == 0) {
			al_result *res = NULL;
			char *canon = NULL;
			adopted_tail(&tail, d);
			if (al_result_from_json(text, len, &res, NULL) == 0)
				canon = al_result_to_json(res, 0);
			al_result_free(res);
			if (canon != NULL)
				record_text(f, run_id, canon);
			else
				record_lost(f, run_id, "result_unreadable");
			free(canon);
			free(text);
			break;
		}
		if (last && adopted_reserve(f, run_id, d))
			break;
		if (last) {
			if (killed)
				record_killed(f, run_id, d);
			else
				record_lost(f, run_id, "supervisor_gone");
			break;
		}
		/* result.pending: finished, its result waits for room on the
		 * disk; neither killed nor called lost. */
		bool waiting = al_record_file_exists(d, AL_RF_PENDING);
		bool alive = waiting;
		if (!alive && have_rec) {
			al_identity id;
			alive = (al_identity_read(d, &id) == 0 &&
				 al_identity_verify(&id, rec.nonce) == 0) ||
				al_identity_scan(rec.nonce, &id) == 0;
		}
		if (alive && !waiting && !gave_up && ac.stop_at != 0 &&
		    al_now_ms() >= ac.stop_at + STOP_ESCALATE_MS) {
			int rc = kill_adopted(d, &rec);
			if (rc == 0) {
				killed = true;
				alive = false;
				al_logf(AL_LOG_WARN, run_id,
					"fleet: the adopted run did not stop "
					"within its grace; its tree was "
					"killed");
			} else {
				al_logf(AL_LOG_WARN, run_id,
					"fleet: cannot end the adopted run: %s",
					strerror(-rc));
				gave_up = true; /* keep watching */
			}
		}
		/* Gone: one more look, its result may have just landed. */
		last = !alive;
		if (alive && stopping(f)) {
			done = false;
			break;
		}
		if (alive)
			sleep_ms(100);
	}
out:
	if (tail.fd >= 0)
		close(tail.fd);
	al_recovery_clear(&rec);
	if (d >= 0)
		close(d);
	if (runs >= 0)
		close(runs);
	return done;
}

static void *exec_main(void *arg)
{
	job *j = arg;
	al_fleet *f = j->f;
	al_service *svc = f->svc;
	al_srv_run *run = j->run;
	const char *id = j->r.run_id;
	int rc = 0;
	char trace_id[33] = ""; /* the log context's, while this runs */
	if (j->adopted_dir != NULL) {
		(void)watch_adopted(f, id, j->adopted_dir);
	} else if (run == NULL) {
		al_srv_gen *gen = al_service_gen_get(svc);
		const char *tp = j->r.traceparent[0] ? j->r.traceparent : NULL;
		al_srv_submit_headers h = {.run_id = id,
					   .forwarded_env = j->fwd_env,
					   .traceparent = tp};
		/* This thread's lines name the caller's trace, as the
		 * submitting node's request lines do. */
		if (tp != NULL)
			snprintf(trace_id, sizeof(trace_id), "%.32s", tp + 3);
		al_log_context(NULL, tp != NULL ? trace_id : NULL);
		if (tp != NULL)
			al_logf(AL_LOG_INFO, id,
				"fleet: claimed a run queued with the caller's "
				"trace");
		rc = gen != NULL ? al_service_submit(svc, gen, j->r.tenant,
						     j->r.principal, j->r.body,
						     strlen(j->r.body), &h,
						     &run)
				 : -ESHUTDOWN;
		al_service_gen_put(svc, gen);
		/* The run holds its own copy now. */
		al_explicit_free_str(j->fwd_env);
		j->fwd_env = NULL;
	}
	if (j->adopted_dir != NULL) {
		/* watched above */
	} else if (rc < 0) {
		json_t *o = json_pack("{s:s, s:s, s:s}", "run_id", id,
				      "outcome", "unavailable", "reason",
				      rc == -ESHUTDOWN ? "shutting_down"
						       : "unavailable");
		char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		if (text != NULL)
			record(f, id, 503, "unavailable", text);
		free(text);
	} else {
		if (follow(f, run, id))
			record_local(f, run, id, j->r.tenant);
		al_service_run_put(svc, run);
	}
	al_log_context(NULL, NULL);
	pthread_mutex_lock(&f->lock);
	ids_del_locked(f, id);
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	al_store_run_clear(&j->r);
	free(j->adopted_dir);
	free(j);
	return NULL;
}

/* Starts watching an adopted run (counted like a claimed one, so that
 * reconcile knows it is followed). */
static void watch_start(al_fleet *f, const char *run_id, const char *tenant,
			const char *dir)
{
	job *j = calloc(1, sizeof(*j));
	if (j == NULL || (j->adopted_dir = strdup(dir)) == NULL ||
	    (j->r.tenant = strdup(tenant)) == NULL) {
		if (j != NULL) {
			free(j->adopted_dir);
			free(j);
		}
		return; /* the next start or reconcile looks again */
	}
	j->f = f;
	snprintf(j->r.run_id, sizeof(j->r.run_id), "%s", run_id);
	pthread_mutex_lock(&f->lock);
	bool known = ids_has_locked(f, run_id);
	int added = known ? -EEXIST : ids_add_locked(f, run_id);
	pthread_mutex_unlock(&f->lock);
	if (added < 0 || spawn(j) < 0) {
		if (added == 0) {
			pthread_mutex_lock(&f->lock);
			ids_del_locked(f, run_id);
			pthread_mutex_unlock(&f->lock);
		}
		al_store_run_clear(&j->r);
		free(j->adopted_dir);
		free(j);
	}
}

static void on_adopt(void *ctx, const char *run_id, const char *tenant,
		     const char *dir)
{
	al_fleet *f = ctx;
	al_logf(AL_LOG_WARN, run_id,
		"fleet: adopted from a dead node on this host; watching its "
		"supervisor");
	watch_start(f, run_id, tenant, dir);
}

/* Starts a job's thread; counted in f->executing by the caller. */
static int spawn(job *j)
{
	pthread_attr_t attr;
	pthread_t tid;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = -pthread_create(&tid, &attr, exec_main, j);
	pthread_attr_destroy(&attr);
	return rc;
}

/* ---- claiming, heartbeats -------------------------------------------- */

static bool stopping(al_fleet *f)
{
	pthread_mutex_lock(&f->lock);
	bool s = f->stopping;
	pthread_mutex_unlock(&f->lock);
	return s;
}

static bool reconcile(al_fleet *f);

/* Claims when woken (set_self: a queued run names one node with a free
 * slot), right away again while a claim left runs queued, and otherwise
 * at most every POLL_MS (a wake-up lost with the listener's connection, a
 * woken node that died). */
#define POLL_MS 2000u

static void *claim_main(void *arg)
{
	al_fleet *f = arg;
	uint64_t seen = 0;
	bool told = false, look = true;
	unsigned timeout = POLL_MS;
	for (;;) {
		pthread_mutex_lock(&f->lock);
		while (f->executing >= f->slots && !f->stopping)
			pthread_cond_wait(&f->cond, &f->lock);
		bool stop = f->stopping;
		pthread_mutex_unlock(&f->lock);
		if (stop)
			break;
		/* A wake-up that came while this node was full counts.  In
		 * slices: a stopping node does not wait out the poll. */
		uint64_t before = seen;
		bool asked = look;
		for (unsigned waited = 0; !look && seen == before &&
					  waited < timeout && !stopping(f);
		     waited += 250)
			f->st->ops->wait(f->st, true, &seen, 250);
		/* Neither asked to look again nor woken: the timer's look. */
		bool polled = !asked && seen == before;
		timeout = POLL_MS;
		if (stopping(f))
			break;
		job *j = calloc(1, sizeof(*j));
		if (j == NULL) {
			sleep_ms(100);
			look = true;
			continue;
		}
		j->f = f;
		int rc = f->st->ops->claim(f->st, f->node, f->langs, &j->r);
		pthread_mutex_lock(&f->lock);
		f->claims++;
		f->polls += polled;
		f->claim_errors += rc < 0;
		f->claimed += rc == 1;
		pthread_mutex_unlock(&f->lock);
		look = rc == 1 && j->r.more;
		/* A pinned run's environment is in this memory, or nowhere
		 * (this node restarted since it accepted the run). */
		if (rc == 1 && j->r.pinned &&
		    (j->fwd_env = al_fleet_pin_take(f, j->r.run_id)) == NULL) {
			record_lost(f, j->r.run_id, "forwarded_env_lost");
			al_store_run_clear(&j->r);
			free(j);
			continue;
		}
		if (rc == 1) {
			told = false;
			pthread_mutex_lock(&f->lock);
			int added = ids_add_locked(f, j->r.run_id);
			pthread_mutex_unlock(&f->lock);
			if (added < 0 || spawn(j) < 0) {
				record_lost(f, j->r.run_id, "no_thread");
				pthread_mutex_lock(&f->lock);
				if (added == 0)
					ids_del_locked(f, j->r.run_id);
				pthread_mutex_unlock(&f->lock);
				al_store_run_clear(&j->r);
				al_explicit_free_str(j->fwd_env);
				free(j);
			}
			continue;
		}
		free(j);
		/* A claim whose answer was lost may have committed. */
		if (rc < 0)
			f->reconcile = true;
		else if (f->reconcile)
			f->reconcile = !reconcile(f);
		if (rc < 0 && !told) {
			al_logf(AL_LOG_WARN, NULL,
				"fleet: cannot claim from the store: %s",
				strerror(-rc));
			told = true;
		}
		if (rc < 0)
			timeout = 500;
	}
	return NULL;
}

/* The nodes whose lease ran out, sorted: those whose process is seen
 * alive on this host (slow, not dead: their runs are left to them) and
 * the rest, dead. */
typedef struct lapse_scan {
	const al_fleet *f;
	json_t *dead, *slow;
} lapse_scan;

static void on_lapsed(void *ctx, const char *node, const char *facts)
{
	lapse_scan *ls = ctx;
	json_t *to = al_node_process_alive(facts, ls->f->boot_id) ? ls->slow
								   : ls->dead;
	json_array_append_new(to, json_string(node));
}

/* Tells the operator when the set of slow nodes changes (*told: the
 * last told, their names). */
static void tell_slow(const json_t *slow, char **told)
{
	char *now = strdup("");
	size_t i;
	json_t *v;
	json_array_foreach(slow, i, v)
	{
		char *more = now == NULL ? NULL
					 : al_strdup_printf("%s%s%s", now,
							    i > 0 ? ", " : "",
							    json_string_value(v));
		free(now);
		now = more;
	}
	if (now == NULL || (*told != NULL && strcmp(now, *told) == 0)) {
		free(now);
		return;
	}
	if (now[0] != '\0')
		al_logf(AL_LOG_WARN, NULL,
			"fleet: the lease of %s ran out but its process lives "
			"on this host (slow, not dead): its runs are left to it",
			now);
	free(*told);
	*told = now;
}

/* Adopts (same host first: a dead node's supervisors outlive it) and
 * settles the runs of the nodes found dead: the number settled lost. */
static int settle_dead(al_fleet *f, char **told_slow)
{
	lapse_scan ls = {f, json_array(), json_array()};
	int rc = ls.dead != NULL && ls.slow != NULL ? 0 : -ENOMEM;
	if (rc == 0)
		rc = f->st->ops->lapsed(f->st, f->node, f->lease_ms, on_lapsed,
					&ls);
	if (rc == 0)
		tell_slow(ls.slow, told_slow);
	char *dead = rc == 0 && json_array_size(ls.dead) > 0
			     ? json_dumps(ls.dead, JSON_COMPACT)
			     : NULL;
	if (rc == 0 && json_array_size(ls.dead) > 0 && dead == NULL)
		rc = -ENOMEM;
	int lost = 0;
	if (dead != NULL && f->adopt)
		rc = f->st->ops->adopt(f->st, f->node, f->host, f->boot_id,
				       f->lease_ms, dead, on_adopt, f);
	if (dead != NULL && rc >= 0) {
		lost = f->st->ops->reap(f->st, f->node, f->lease_ms, dead);
		rc = lost < 0 ? lost : 0;
	}
	free(dead);
	json_decref(ls.dead);
	json_decref(ls.slow);
	return rc < 0 ? rc : lost;
}

static void *beat_main(void *arg)
{
	al_fleet *f = arg;
	bool told = false;
	char *told_slow = NULL;
	while (!stopping(f)) {
		pthread_mutex_lock(&f->lock);
		unsigned in_use = f->executing;
		pthread_mutex_unlock(&f->lock);
		al_store_node n = {f->node, f->host, f->slots, in_use,
				   f->facts};
		int rc = f->st->ops->heartbeat(f->st, &n);
		int lost = rc >= 0 ? settle_dead(f, &told_slow) : rc;
		if (lost > 0)
			al_logf(AL_LOG_WARN, NULL,
				"fleet: settled %d run(s) of nodes whose lease "
				"ran out as lost",
				lost);
		if ((rc < 0 || lost < 0) && !told)
			al_logf(AL_LOG_WARN, NULL,
				"fleet: the store is unreachable; retrying");
		told = rc < 0 || lost < 0;
		pthread_mutex_lock(&f->lock);
		if (!f->stopping) {
			struct timespec dl;
			al_deadline(CLOCK_REALTIME, &dl, f->heartbeat_ms);
			pthread_cond_timedwait(&f->cond, &f->lock, &dl);
		}
		pthread_mutex_unlock(&f->lock);
	}
	free(told_slow);
	return NULL;
}

/* Moves committed audit records into the fleet's chain shortly after
 * they commit.  Every node runs this; the chain's lock lets one at a
 * time do it, in batches. */
static void *chain_main(void *arg)
{
	al_fleet *f = arg;
	uint64_t seen = 0;
	while (!stopping(f)) {
		int n = f->st->ops->audit_chain(f->st);
		if (n < 1000)
			f->st->ops->wait(f->st, false, &seen, n < 0 ? 500 : 200);
	}
	/* What this node committed last is chained before it goes. */
	for (int i = 0; i < 10 && f->st->ops->audit_chain(f->st) > 0; i++)
		;
	return NULL;
}

/* ---- start: configuration, orphans ----------------------------------- */

typedef struct orphan {
	char run_id[40];
	char *tenant;
	char *dir; /* adopted: the dead node's state directory */
} orphan;

typedef struct orphans {
	orphan *v;
	size_t n, cap;
} orphans;

static void collect(void *ctx, const char *run_id, const char *tenant,
		    const char *dir)
{
	orphans *o = ctx;
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		orphan *v = realloc(o->v, cap * sizeof(*v));
		if (v == NULL)
			return;
		o->v = v;
		o->cap = cap;
	}
	orphan *e = &o->v[o->n];
	snprintf(e->run_id, sizeof(e->run_id), "%s", run_id);
	e->tenant = strdup(tenant);
	e->dir = dir != NULL ? strdup(dir) : NULL;
	if (e->tenant != NULL && (dir == NULL || e->dir != NULL))
		o->n++;
	else {
		free(e->tenant);
		free(e->dir);
	}
}

/* What the store has as running on this node after a restart: a run this
 * node's recovery adopted is followed again, one it finished is recorded
 * with its result, anything else is lost (it was claimed but never
 * launched here) — never run again. */
static void settle_orphans(al_fleet *f)
{
	orphans o = {0};
	if (f->st->ops->orphans(f->st, f->node, collect, &o) < 0)
		al_logf(AL_LOG_WARN, NULL,
			"fleet: cannot list this node's runs in the store");
	for (size_t i = 0; i < o.n; i++) {
		const char *id = o.v[i].run_id, *tenant = o.v[i].tenant;
		if (o.v[i].dir != NULL) {
			watch_start(f, id, tenant, o.v[i].dir);
			continue;
		}
		al_srv_run *run = al_service_find(f->svc, tenant, id);
		al_srv_stored st;
		if (run != NULL) {
			job *j = calloc(1, sizeof(*j));
			if (j != NULL) {
				j->f = f;
				j->run = run;
				snprintf(j->r.run_id, sizeof(j->r.run_id), "%s",
					 id);
				j->r.tenant = strdup(tenant);
			}
			if (j == NULL || j->r.tenant == NULL) {
				if (j != NULL)
					free(j);
				al_service_run_put(f->svc, run);
				continue;
			}
			pthread_mutex_lock(&f->lock);
			int added = ids_add_locked(f, id);
			pthread_mutex_unlock(&f->lock);
			if (added < 0 || spawn(j) < 0) {
				pthread_mutex_lock(&f->lock);
				if (added == 0)
					ids_del_locked(f, id);
				pthread_mutex_unlock(&f->lock);
				al_service_run_put(f->svc, run);
				al_store_run_clear(&j->r);
				free(j);
			}
		} else if (al_service_stored_result(f->svc, tenant, id, NULL,
						    &st) == 0) {
			char *text = st.fd >= 0 ? read_all(st.fd, st.size)
						: st.text;
			if (st.fd < 0)
				st.text = NULL;
			al_srv_stored_clear(&st);
			if (text != NULL) {
				json_t *r = json_loads(text, 0, NULL);
				const char *oc = json_string_value(
					json_object_get(r, "outcome"));
				record(f, id, al_fleet_status_of(text),
				       oc ? oc : "unavailable", text);
				json_decref(r);
			} else {
				record_lost(f, id, "result_unreadable");
			}
			free(text);
		} else {
			record_lost(f, id, "node_restarted");
		}
	}
	for (size_t i = 0; i < o.n; i++) {
		free(o.v[i].tenant);
		free(o.v[i].dir);
	}
	free(o.v);
}

/* Runs the store has as ours that this node is not following: a claim
 * whose commit went through while its answer was lost.  This node never
 * started them (the claimer, which runs this, is the only one that
 * starts claimed runs), so they are given back to the queue.  true when
 * the store could be asked. */
static bool reconcile(al_fleet *f)
{
	orphans o = {0};
	bool ok = f->st->ops->orphans(f->st, f->node, collect, &o) == 0;
	for (size_t i = 0; ok && i < o.n; i++) {
		pthread_mutex_lock(&f->lock);
		bool known = ids_has_locked(f, o.v[i].run_id);
		pthread_mutex_unlock(&f->lock);
		if (!known && o.v[i].dir != NULL) {
			watch_start(f, o.v[i].run_id, o.v[i].tenant,
				    o.v[i].dir);
			continue;
		}
		al_srv_run *run = known ? NULL
					: al_service_find(f->svc, o.v[i].tenant,
							  o.v[i].run_id);
		if (run != NULL)
			al_service_run_put(f->svc, run);
		else if (!known &&
			 f->st->ops->requeue(f->st, f->node, o.v[i].run_id) ==
				 1)
			al_logf(AL_LOG_WARN, o.v[i].run_id,
				"fleet: a claim's answer was lost; the run "
				"never started here and is queued again");
	}
	for (size_t i = 0; i < o.n; i++) {
		free(o.v[i].tenant);
		free(o.v[i].dir);
	}
	free(o.v);
	return ok;
}

/* This boot of this machine: supervisors of a dead node are adoptable
 * only by a node of the same boot ("" when unknown: never adopts). */
static void read_boot_id(char *out, size_t len)
{
	out[0] = '\0';
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, out, len - 1);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
	char *nl = strchr(out, '\n');
	if (nl != NULL)
		*nl = '\0';
}

static int parse_fleet(al_fleet *f, json_t *fl, al_error **err)
{
	static const char *const keys[] = {"node_id", "lease_ms",
					   "artifacts_dir", "adopt", NULL};
	const char *key;
	json_t *v;
	if (fl == NULL)
		return 0;
	if (!json_is_object(fl))
		return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL, "fleet",
				    "expected an object");
	json_object_foreach(fl, key, v)
	{
		bool known = false;
		for (size_t i = 0; keys[i] != NULL; i++)
			known = known || strcmp(key, keys[i]) == 0;
		if (!known)
			return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL,
					    "fleet", "unknown field");
	}
	if ((v = json_object_get(fl, "node_id")) != NULL) {
		const char *s = json_string_value(v);
		size_t len = s ? strlen(s) : 0;
		bool ok = len > 0 && len < sizeof(f->node);
		for (size_t i = 0; ok && i < len; i++)
			ok = (s[i] >= 'a' && s[i] <= 'z') ||
			     (s[i] >= 'A' && s[i] <= 'Z') ||
			     (s[i] >= '0' && s[i] <= '9') ||
			     strchr("._-", s[i]) != NULL;
		if (!ok)
			return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL,
					    "fleet.node_id",
					    "expected [A-Za-z0-9._-]{1,63}");
		snprintf(f->node, sizeof(f->node), "%s", s);
	}
	if ((v = json_object_get(fl, "artifacts_dir")) != NULL) {
		const char *dir = json_string_value(v);
		if (dir == NULL || dir[0] != '/' || strlen(dir) > 4000)
			return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL,
					    "fleet.artifacts_dir",
					    "expected an absolute path");
		char *base = al_strdup_printf("%s/artifacts", dir);
		struct stat st;
		/* The same trust as a state directory's store: ours, not
		 * writable by others (al_artifact_open checks it again). */
		if (base == NULL ||
		    ((mkdir(dir, 0700) < 0 && errno != EEXIST) ||
		     (mkdir(base, 0700) < 0 && errno != EEXIST) ||
		     lstat(base, &st) < 0 || !S_ISDIR(st.st_mode) ||
		     st.st_uid != geteuid() || (st.st_mode & 022) != 0)) {
			free(base);
			return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL,
					    "fleet.artifacts_dir",
					    "cannot use the directory (it must "
					    "be ours, not writable by others)");
		}
		free(base);
		if ((f->artifacts_root = strdup(dir)) == NULL)
			return al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
					    "out of memory");
	}
	if ((v = json_object_get(fl, "adopt")) != NULL) {
		if (!json_is_boolean(v))
			return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL,
					    "fleet.adopt", "expected a boolean");
		f->adopt = json_is_true(v);
	}
	if ((v = json_object_get(fl, "lease_ms")) != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 500 ||
		    json_integer_value(v) > 600000)
			return al_error_set(err, AL_ERR_INVALID_CONFIG, EINVAL,
					    "fleet.lease_ms",
					    "expected an integer from 500 to "
					    "600000");
		f->lease_ms = (uint64_t)json_integer_value(v);
	}
	return 0;
}

static int start_threads(al_fleet *f, al_error **err)
{
	if (pthread_create(&f->beater, NULL, beat_main, f) != 0)
		return al_error_set(err, AL_ERR_INTERNAL, EAGAIN, NULL,
				    "cannot start the fleet's threads");
	f->beating = true;
	if (pthread_create(&f->claimer, NULL, claim_main, f) != 0)
		return al_error_set(err, AL_ERR_INTERNAL, EAGAIN, NULL,
				    "cannot start the fleet's threads");
	f->claiming = true;
	if (pthread_create(&f->chainer, NULL, chain_main, f) != 0)
		return al_error_set(err, AL_ERR_INTERNAL, EAGAIN, NULL,
				    "cannot start the fleet's threads");
	f->chaining = true;
	return 0;
}

/* The languages some available provider of this node runs for some
 * tenant (probed, as GET /v1/capabilities reports them): the node claims
 * only runs in these (or runs no live node published a language for). */
static json_t *node_languages(al_host *host, const al_config *cfg)
{
	json_t *langs = json_array();
	for (size_t t = 0; langs != NULL && t < cfg->n_tenants; t++) {
		al_host_context hc = {.tenant = cfg->tenants[t].name};
		al_facts **facts = NULL;
		size_t n = 0;
		al_error *err = NULL;
		if (al_host_capabilities(host, &hc, &facts, &n, &err) < 0) {
			al_error_free(err);
			continue;
		}
		for (size_t i = 0; i < n; i++) {
			if (!facts[i]->available)
				continue;
			for (size_t l = 0; l < facts[i]->n_languages; l++) {
				const char *name =
					facts[i]->languages[l].language;
				bool have = false;
				size_t k;
				json_t *v;
				json_array_foreach(langs, k, v) have =
					have ||
					strcmp(json_string_value(v), name) == 0;
				if (!have)
					json_array_append_new(langs,
							      json_string(name));
			}
		}
		al_facts_array_free(facts, n);
	}
	return langs;
}

static char *facts_json(const al_fleet *f, const al_config *cfg,
			unsigned slots, json_t *langs)
{
	json_t *o = json_object(), *p = json_array();
	/* Whether this node lives, for the nodes of its host to see when
	 * its lease runs out. */
	if (o != NULL && al_node_process_publish(o, f->boot_id) < 0) {
		json_decref(o);
		o = NULL;
	}
	if (o != NULL && f->adopt && f->boot_id[0] != '\0' &&
	    (json_object_set_new(o, "boot_id", json_string(f->boot_id)) < 0 ||
	     json_object_set_new(o, "state_dir",
				 json_string(f->svc->opts.state_dir)) < 0)) {
		json_decref(o);
		json_decref(p);
		return NULL;
	}
	for (size_t i = 0; p != NULL && i < cfg->n_candidates; i++)
		json_array_append_new(p,
				      json_string(cfg->candidates[i].provider));
	char *text = NULL;
	if (o != NULL && p != NULL && langs != NULL &&
	    json_object_set_new(o, "providers", p) == 0 &&
	    json_object_set(o, "languages", langs) == 0 &&
	    json_object_set_new(o, "concurrency", json_integer(slots)) == 0)
		text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	else
		json_decref(p);
	json_decref(o);
	return text;
}

int al_fleet_start(al_service *svc, al_error **err)
{
	al_srv_gen *gen = al_service_gen_get(svc);
	if (gen == NULL)
		return 0;
	const al_config *cfg = gen->cfg;
	json_t *root = json_loads(cfg->source, 0, NULL);
	const char *url = json_string_value(json_object_get(root, "store"));
	int rc = 0;
	if (url == NULL || strcmp(url, "sqlite") == 0) {
		json_decref(root);
		al_service_gen_put(svc, gen);
		return 0;
	}
	al_fleet *f = calloc(1, sizeof(*f));
	if (f == NULL) {
		rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				  "out of memory");
		goto out;
	}
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	f->svc = svc;
	f->lease_ms = DEFAULT_LEASE_MS;
	f->adopt = true;
	read_boot_id(f->boot_id, sizeof(f->boot_id));
	f->slots = cfg->concurrency > 0 ? cfg->concurrency : 1;
	gethostname(f->host, sizeof(f->host) - 1);
	/* The default node id: this host and state directory, so a restart
	 * is the same node (it settles what it had claimed). */
	char tag[65];
	al_sha256_hex(svc->opts.state_dir, strlen(svc->opts.state_dir), tag);
	snprintf(f->node, sizeof(f->node), "%.40s-%.8s", f->host, tag);
	if ((rc = parse_fleet(f, json_object_get(root, "fleet"), err)) < 0)
		goto out;
	f->heartbeat_ms = f->lease_ms / 5 ? f->lease_ms / 5 : 100;
	json_t *langs = node_languages(gen->host, cfg);
	f->facts = facts_json(f, cfg, f->slots, langs);
	f->langs = langs ? json_dumps(langs, JSON_COMPACT) : NULL;
	json_decref(langs);
	if (f->facts == NULL || f->langs == NULL) {
		rc = al_error_set(err, AL_ERR_INTERNAL, ENOMEM, NULL,
				  "out of memory");
		goto out;
	}
	if ((rc = al_store_open(url, &f->st, err)) < 0)
		goto out;
	f->st->ops->set_self(f->st, f->node, f->lease_ms);
	svc->fleet = f;
	settle_orphans(f);
	/* Runs pinned to this node before it restarted: their forwarded
	 * environments went with the old process. */
	if (f->st->ops->lose_pinned(f->st, f->node) < 0)
		al_logf(AL_LOG_WARN, NULL,
			"fleet: cannot settle this node's pinned runs; its "
			"claimer will");
	if ((rc = start_threads(f, err)) < 0)
		goto out;
	al_logf(AL_LOG_INFO, NULL, "fleet: node %s on a %s store", f->node,
		f->st->ops->name);
out:
	json_decref(root);
	al_service_gen_put(svc, gen);
	if (rc < 0 && f != NULL) {
		al_fleet_stop(svc);
		svc->fleet = f;
		(void)al_fleet_free(svc);
	}
	return rc;
}

void al_fleet_stop(al_service *svc)
{
	al_fleet *f = svc->fleet;
	if (f == NULL)
		return;
	pthread_mutex_lock(&f->lock);
	f->stopping = true;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	if (f->claiming)
		pthread_join(f->claimer, NULL);
	if (f->beating)
		pthread_join(f->beater, NULL);
	if (f->chaining)
		pthread_join(f->chainer, NULL);
	f->claiming = f->beating = f->chaining = false;
}

bool al_fleet_free(al_service *svc)
{
	al_fleet *f = svc->fleet;
	if (f == NULL)
		return true;
	al_fleet_stop(svc);
	/* The claimed runs record their results (the drain let them end or
	 * interrupted them); a store that stays away is given up on after
	 * a while, and the next start settles them. */
	pthread_mutex_lock(&f->lock);
	for (int i = 0; f->executing > 0 && i < 100; i++) {
		if (i == 50)
			f->abandon = true;
		struct timespec dl;
		al_deadline(CLOCK_REALTIME, &dl, 100);
		pthread_cond_timedwait(&f->cond, &f->lock, &dl);
	}
	bool all = f->executing == 0;
	unsigned long long claims = f->claims, claimed = f->claimed,
			   polls = f->polls, errors = f->claim_errors;
	pthread_mutex_unlock(&f->lock);
	if (!all)
		return false;
	/* What claiming cost (docs/scale-out.md, "Wake-ups"): the timer's
	 * looks and the store's refusals (busy, unreachable; retried) apart,
	 * as their number follows the time and the load, not the runs. */
	al_logf(AL_LOG_INFO, NULL,
		"fleet: %llu claim queries (%llu on the safety poll, %llu "
		"failed), %llu runs claimed",
		claims, polls, errors, claimed);
	svc->fleet = NULL;
	/* Queued runs pinned here can run nowhere else: they end now. */
	if (f->st != NULL && f->n_pins > 0)
		(void)f->st->ops->lose_pinned(f->st, f->node);
	for (size_t i = 0; i < f->n_pins; i++)
		al_explicit_free_str(f->pins[i].env);
	free(f->pins);
	/* The records of the runs recorded during the drain. */
	for (int i = 0; f->st != NULL && i < 10 &&
			f->st->ops->audit_chain(f->st) > 0;
	     i++)
		;
	if (f->st != NULL)
		f->st->ops->close(f->st);
	free(f->facts);
	free(f->langs);
	free(f->ids);
	free(f->artifacts_root);
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
	free(f);
	return true;
}
