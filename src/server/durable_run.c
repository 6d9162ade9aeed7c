/* Durable runs in the service (docs/durability.md): an admitted run is
 * persisted, handed to its supervisor, watched (live output tailed from
 * the run's directory), escalated when a stop or the deadline is overdue,
 * and finished exactly once under the run's lock.  At start-up every run
 * directory is classified: finished ones are listed, live ones adopted
 * (a watcher each), the rest finished as recorded or as lost. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <airlock/json.h>

#include "core/log.h"
#include "core/util.h"
#include "server/service.h"
#include "server/carry.h"
#include "supervisor/record_file.h"
#include "supervisor/fault.h"
#include "supervisor/run_records.h"

/* A stop escalates to killing the tree when the run has not ended this
 * long after it: the provider's TERM-to-KILL grace plus margin. */
#define STOP_ESCALATE_MS (AL_DEFAULT_GRACE_MS + 2500)
/* The supervisor enforces the deadline itself; the daemon steps in only
 * when it is this far past it (a supervisor stopped or stuck). */
#define DEADLINE_BACKSTOP_MS 15000
#define TICK_MS 50

/* Retries of a record the disk has no room for: 100 ms, doubling to
 * 5 s, until it is written or the daemon stops (the run's result.json,
 * when there is one, then lets the next daemon finish it). */
#define RETRY_FIRST_MS 100
#define RETRY_MAX_MS 5000

/* One run's wait for room on the disk, counted once in the
 * records-pending gauge while it lasts. */
typedef struct pending {
	al_service *svc; /* NULL: no retry (recovery, before listening) */
	const char *run_id;
	bool counted;
	bool gave_up;
} pending;

static void pending_set(pending *p, bool on)
{
	if (p->svc == NULL || p->counted == on)
		return;
	p->counted = on;
	al_srv_metrics_pending(p->svc->metrics, on ? 1 : -1);
}

/* 0: try again now; negative: give up. */
static int pending_wait(void *ctx, unsigned attempt)
{
	pending *p = ctx;
	if (p->svc == NULL)
		return -1;
	if (!p->counted)
		al_logf(AL_LOG_WARN, p->run_id,
			"cannot record its end (no room on the disk?); kept in "
			"memory, retrying");
	pending_set(p, true);
	pthread_mutex_lock(&p->svc->lock);
	bool stopping = p->svc->draining;
	pthread_mutex_unlock(&p->svc->lock);
	if (stopping) {
		p->gave_up = true;
		return -1;
	}
	long ms = RETRY_FIRST_MS;
	for (unsigned i = 0; i < attempt && ms < RETRY_MAX_MS; i++)
		ms *= 2;
	if (ms > RETRY_MAX_MS)
		ms = RETRY_MAX_MS;
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
	return 0;
}

typedef struct finished {
	char *json;
	unsigned status;
	al_outcome outcome;
} finished;

static void finished_from(finished *f, const al_result *res)
{
	f->json = al_result_to_json(res, 0);
	f->status = al_srv_status_for(res->outcome, res->reason);
	f->outcome = res->outcome;
}

/* Step 11 for the run, once, under its lock: a run another daemon
 * already finished keeps that result; a daemon that died part way
 * through finishing does not write run.finished twice. */
static void finish(al_service *svc, al_host *host, al_drun *dr,
		   al_admission *adm, al_result *raw,
		   const al_finish_options *base, bool recovered, bool cleanup,
		   finished *f)
{
	al_finish_options o = *base;
	al_result *res = NULL;
	char *final = NULL;
	char run_id[40];
	pending p = {.svc = svc, .run_id = run_id};

	snprintf(run_id, sizeof(run_id), "%s", al_drun_id(dr));
	/* A full disk: run.finished and final.json are retried until they
	 * are written, the run answering as running meanwhile. */
	o.audit_retry = pending_wait;
	o.audit_retry_ctx = &p;
	if (al_drun_lock(dr) < 0)
		al_logf(AL_LOG_WARN, run_id, "cannot lock it to finish");
	if (al_drun_read_final(dr, &final) == 0) {
		al_result *fr = NULL;
		if (al_result_from_json(final, strlen(final), &fr, NULL) == 0) {
			al_result_free(raw);
			o.as_final = true;
			if (al_host_finish(host, adm, fr, &o, &res) == 0) {
				f->status =
					al_srv_status_for(res->outcome, res->reason);
				f->outcome = res->outcome;
				f->json = final;
				final = NULL;
			}
			al_result_free(res);
			free(final);
			al_drun_unlock(dr);
			return;
		}
		/* An unreadable final record is replaced. */
		free(final);
	}
	/* A run an earlier daemon left may have been finished up to the
	 * audit record (the finishing marker is not synced: after a machine
	 * crash it may be gone), so a recovered run always asks the audit
	 * trail. */
	int began = al_drun_mark_finishing(dr);
	o.skip_audit = (began == 1 || recovered) &&
		       al_host_audit_has(host, run_id, "run.finished") == 1;
	if (al_host_finish(host, adm, raw, &o, &res) == 0 && res != NULL) {
		finished_from(f, res);
		al_fault_point("before_ack");
		int wr = f->json != NULL ? al_drun_write_final(dr, f->json) : 0;
		for (unsigned attempt = 0; wr < 0; attempt++) {
			if (!al_record_file_no_space(wr) ||
			    pending_wait(&p, attempt) < 0) {
				al_logf(AL_LOG_WARN, run_id,
					"cannot record its final result: %s",
					strerror(-wr));
				break;
			}
			wr = al_drun_write_final(dr, f->json);
		}
	}
	if (p.counted)
		al_logf(AL_LOG_INFO, run_id, "%s",
			p.gave_up ? "stopping: its end is left to the next "
				    "start"
				  : "its end is recorded");
	pending_set(&p, false);
	al_result_free(res);
	al_drun_unlock(dr);
	/* Without: the caller cleans up once the run is answered (a daemon
	 * that dies before does it at its next start, from final.json). */
	if (cleanup)
		al_drun_cleanup(dr);
	else
		al_drun_remove_cgroup(dr); /* gone when the run is answered */
}

/* A result the daemon makes itself when it had to kill the tree. */
static al_result *made_result(al_drun *dr, al_outcome outcome)
{
	al_result *r = al_result_new();
	if (r == NULL)
		return NULL;
	snprintf(r->run_id, sizeof(r->run_id), "%s", al_drun_id(dr));
	r->finished_at_ms = al_now_ms();
	if (al_result_set_outcome(r, outcome,
				  outcome == AL_OUTCOME_TIMED_OUT
					  ? "host_deadline"
					  : NULL) < 0) {
		al_result_free(r);
		return NULL;
	}
	if (outcome == AL_OUTCOME_INTERRUPTED) {
		r->has_signal = true;
		r->signal = SIGKILL;
	}
	(void)al_drun_acked(dr, r);
	return r;
}

/* Watches the supervisor to its end, feeding live output to the run's
 * subscribers; then finishes the run. */
static void watch_and_finish(al_srv_run *run, al_drun *dr, al_admission *adm,
			     bool cleanup, finished *f)
{
	al_service *svc = run->svc;
	int64_t deadline = al_drun_record(dr)->deadline_ms;
	bool killed_stop = false, killed_deadline = false, gave_up = false;
	int ticks = 0;

	pending held = {.svc = svc, .run_id = al_drun_id(dr)};

	for (;;) {
		int ended = al_drun_wait(dr, TICK_MS);
		(void)al_drun_tail(dr, al_service_output, run);
		if (ended)
			break;
		if (++ticks == 4)
			al_fault_point("during_run");
		/* The supervisor holds a result the disk had no room for: it
		 * is counted, and neither killed nor called lost. */
		bool waiting = al_drun_result_pending(dr);
		if (waiting != held.counted)
			al_logf(AL_LOG_INFO, al_drun_id(dr), "%s",
				waiting ? "its supervisor holds the result "
					  "until the disk has room"
					: "its result is recorded");
		pending_set(&held, waiting);
		if (waiting)
			continue;
		pthread_mutex_lock(&svc->lock);
		bool stop = run->stop_requested;
		int64_t stop_at = run->stop_at_ms;
		pthread_mutex_unlock(&svc->lock);
		int64_t now = al_now_ms();
		bool overdue = now >= deadline + DEADLINE_BACKSTOP_MS;
		if (gave_up || !((stop && now >= stop_at + STOP_ESCALATE_MS) ||
				 overdue))
			continue;
		/* Not ended in time: end the whole tree, verified. */
		int rc = al_drun_kill(dr);
		if (rc == 0) {
			killed_stop = stop;
			killed_deadline = !stop;
		} else {
			al_logf(AL_LOG_WARN, al_drun_id(dr),
				"cannot end it: %s", strerror(-rc));
			gave_up = true; /* keep watching */
		}
	}
	pending_set(&held, false);
	(void)al_drun_tail(dr, al_service_output, run);

	al_result *raw = NULL;
	(void)al_drun_collect(dr, &raw);
	/* The supervisor synced result.json before it said `ended`. */
	bool durable = raw != NULL;
	if (raw != NULL)
		al_fault_point("after_result");
	else if (killed_stop)
		raw = made_result(dr, AL_OUTCOME_INTERRUPTED);
	else if (killed_deadline)
		raw = made_result(dr, AL_OUTCOME_TIMED_OUT);
	al_finish_options o = {.launched = true, .refusal = "lost",
			       .result_durable = durable};
	finish(svc, run->gen->host, dr, adm, raw, &o, false, cleanup, f);
}

/* Hands the handle to the run (interrupts and inbox deliveries reach the
 * supervisor through it), or takes it back and waits until no HTTP thread
 * uses it any more. */
static void publish_drun(al_srv_run *run, al_drun *dr, bool launched)
{
	pthread_mutex_lock(&run->svc->lock);
	run->drun = dr;
	run->launched = launched;
	pthread_mutex_unlock(&run->svc->lock);
}

/* No one reaches the run's records through the table any more; they are
 * the caller's. */
static al_drun *unpublish_drun(al_srv_run *run)
{
	al_service *svc = run->svc;
	pthread_mutex_lock(&svc->lock);
	al_drun *dr = run->drun;
	run->drun = NULL;
	while (run->drun_users > 0)
		pthread_cond_wait(&run->changed, &svc->lock);
	pthread_mutex_unlock(&svc->lock);
	return dr;
}

static void retire_drun(al_srv_run *run)
{
	al_drun_free(unpublish_drun(run));
}

/* How long a supervisor given back may take to say "done": its checks
 * and, for a warm one, its next sandbox (src/supervisor/supervisor.c
 * allows that 10 s), with a margin. */
#define DONE_WAIT_MS 12000

char *al_durable_execute(al_srv_run *run, al_admission *adm,
			 unsigned *status, al_outcome *outcome,
			 al_durable_giveback *gb)
{
	gb->dr = NULL;
	al_service *svc = run->svc;
	al_host *host = run->gen->host;
	const al_request *req = al_admission_request(adm);
	size_t n_env = 0;
	const char *const *env = al_admission_host_env(adm, &n_env);
	char *facts = al_facts_to_json(al_admission_facts(adm), 0);
	char *ops = NULL;
	int hold_fd = -1; /* an interactive run's FIFO, read side */
	int64_t created = al_admission_admitted_ms(adm);
	al_launch_spec spec = {
		.run_id = al_admission_run_id(adm),
		.tenant = al_admission_tenant(adm),
		.principal = al_admission_principal(adm),
		.provider = al_admission_provider(adm),
		.provider_config = al_admission_provider_config(adm),
		.provider_module = al_admission_provider_module(adm),
		.request_json = al_admission_request_json(adm),
		.facts_json = facts,
		.operations_json = al_admission_operations(adm, &ops) == 0
					   ? ops
					   : NULL,
		.host_env = env,
		.n_host_env = n_env,
		.created_ms = created,
	};
	uint64_t budget = 0;
	al_admission_build(adm, &spec.build_cache_bytes,
			   &spec.build_cache_shared, &spec.parallel, &budget);
	spec.deadline_ms = created + (int64_t)budget +
			   (int64_t)al_admission_grace_ms(adm);
	finished f = {NULL, 500, AL_OUTCOME_UNAVAILABLE};
	al_result *res = NULL;
	al_error *err = NULL;
	al_drun *dr = NULL;
	char run_id[40];

	snprintf(run_id, sizeof(run_id), "%s", spec.run_id);
	al_service_set_language(svc, run, req->language);
	al_fault_point("before_persist");
	/* An idle supervisor ready for it (docs/durability.md). */
	bool warm = false;
	al_idle_lend lend = {0};
	al_idle_sup *back = NULL; /* the supervisor, to serve another run */
	if (svc->idle_sups != NULL)
		spec.idle = al_idle_pool_take(svc->idle_sups, spec.provider,
					      spec.provider_config,
					      req->language, &warm, &lend);
	if (al_drun_create(svc->durable, &spec, &dr, &err) < 0) {
		al_idle_discard(spec.idle);
		/* Nothing persisted, nothing launched. */
		al_logf(AL_LOG_INFO, run_id, "%s", al_error_get_message(err));
		al_error_free(err);
		al_service_announce(run, run_id);
		al_finish_options o = {.refusal = "workspace_setup_failed"};
		if (al_host_finish(host, adm, NULL, &o, &res) == 0)
			finished_from(&f, res);
		al_result_free(res);
		free(facts);
		free(ops);
		goto out;
	}
	/* Carried-over events first, before anyone can deliver more. */
	if (req->continues != NULL) {
		int cr = al_carry_over(svc->durable, req->continues, spec.tenant,
				       dr);
		if (cr < 0)
			al_logf(AL_LOG_WARN, run_id,
				"no inbox events carried over: %s",
				strerror(-cr));
		else
			al_logf(AL_LOG_INFO, run_id,
				"%d inbox events carried over", cr);
	}
	/* An interactive run's stdin: the write end is held before the
	 * supervisor starts, so its open never blocks nor sees an early
	 * end.  A daemon that goes away closes it: the program's input
	 * ends (a restarted daemon does not resume the stream).  The read
	 * side is held until the run ends: stdin written and ended before
	 * the supervisor opened the FIFO stays in the pipe for it. */
	int in_fd = -1;
	pthread_mutex_lock(&svc->lock);
	bool interactive = run->stdin_stream;
	pthread_mutex_unlock(&svc->lock);
	if (interactive &&
	    (mkfifoat(al_drun_dirfd(dr), AL_RF_STDIN, 0600) < 0 ||
	     (hold_fd = openat(al_drun_dirfd(dr), AL_RF_STDIN,
			       O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0 ||
	     (in_fd = openat(al_drun_dirfd(dr), AL_RF_STDIN,
			     O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0))
		al_logf(AL_LOG_WARN, run_id, "cannot make its stdin stream: %s",
			strerror(errno));
	pthread_mutex_lock(&svc->lock);
	run->has_dir = true;
	if (in_fd >= 0 && run->stdin_stream) {
		run->stdin_fd = in_fd;
		run->stdin_open = true;
	} else if (in_fd >= 0) {
		close(in_fd); /* the client already ended stdin */
	}
	pthread_cond_broadcast(&run->changed);
	pthread_mutex_unlock(&svc->lock);
	/* Written: the inbox takes events. */
	publish_drun(run, dr, false);
	int rc = al_drun_start(dr, &spec, &err);
	free(facts);
	free(ops);
	/* The record and its directory synced while the run starts, and
	 * before its id is given out: a caller that holds the id finds the
	 * run after a machine crash. */
	int dur = rc == 0 ? al_drun_make_durable(dr) : 0;
	if (dur < 0)
		al_logf(AL_LOG_WARN, run_id,
			"cannot sync its record: %s; a machine crash would "
			"leave it closed as lost by the audit trail alone",
			strerror(-dur));
	al_service_announce(run, run_id);
	if (rc == 0 && svc->idle_sups != NULL)
		al_idle_pool_count(svc->idle_sups, al_drun_handed_off(dr), warm);
	if (rc < 0) {
		al_logf(AL_LOG_INFO, run_id, "%s", al_error_get_message(err));
		al_error_free(err);
		al_finish_options o = {.refusal = "start_failed"};
		finish(svc, host, dr, adm, NULL, &o, false, true, &f);
		retire_drun(run);
		goto out;
	}
	publish_drun(run, dr, true);
	/* An interrupt that came while it was being launched. */
	if (al_cancel_state(run->cancel) != AL_CANCEL_NONE)
		(void)al_drun_control(dr, AL_CONTROL_INTERRUPT);
	watch_and_finish(run, dr, adm, false, &f);
	/* Finished (final.json written): its supervisor may take the next
	 * run (docs/durability.md, "A supervisor that serves several
	 * runs"), and its clean-up waits until it is answered. */
	back = al_drun_give_back(dr);
	gb->dr = unpublish_drun(run);
	pthread_mutex_lock(&svc->lock);
	if (run->stdin_open)
		close(run->stdin_fd);
	run->stdin_open = false;
	pthread_mutex_unlock(&svc->lock);
	/* A generic supervisor's checks take a moment: it is back among
	 * the ready ones before the answer lets the client send its next
	 * run, which would otherwise find none and start one cold.  A warm
	 * one makes its next sandbox first: after the answer. */
	if (back != NULL && !warm) {
		if (al_idle_wait_done(back, run_id, DONE_WAIT_MS) < 0) {
			al_idle_discard(back);
			back = NULL;
		}
		if (svc->idle_sups != NULL)
			al_idle_pool_return(svc->idle_sups, &lend, back);
		else
			al_idle_discard(back);
		back = NULL;
	}
out:
	gb->lend = lend;
	gb->sup = back;
	snprintf(gb->run_id, sizeof(gb->run_id), "%s", run_id);
	if (hold_fd >= 0)
		close(hold_fd);
	*status = f.status;
	*outcome = f.outcome;
	return f.json;
}


void al_durable_give_back(al_service *svc, al_durable_giveback *gb)
{
	if (gb->dr != NULL) {
		al_drun_cleanup(gb->dr);
		al_drun_free(gb->dr);
		gb->dr = NULL;
	}
	al_idle_sup *sup = gb->sup;
	gb->sup = NULL;
	if (sup != NULL &&
	    al_idle_wait_done(sup, gb->run_id, DONE_WAIT_MS) < 0) {
		al_idle_discard(sup);
		sup = NULL;
	}
	if (svc->idle_sups != NULL)
		al_idle_pool_return(svc->idle_sups, &gb->lend, sup);
	else
		al_idle_discard(sup);
}

void *al_durable_adopted_main(void *arg)
{
	al_srv_run *run = arg;
	al_service *svc = run->svc;
	finished f = {NULL, 500, AL_OUTCOME_UNAVAILABLE};

	pthread_mutex_lock(&svc->lock);
	al_admission *adm = run->adopted;
	al_drun *dr = run->drun;
	run->adopted = NULL;
	pthread_mutex_unlock(&svc->lock);
	watch_and_finish(run, dr, adm, true, &f);
	retire_drun(run);
	if (f.json == NULL)
		f.json = strdup("{\"error\":\"internal\",\"message\":\"the run "
				"produced no result\"}");
	al_service_publish(svc, run, f.json, f.status, f.outcome);
	return NULL;
}

/* ---- recovery -------------------------------------------------------- */

/* A run finished by an earlier daemon: listed with its final result. */
static void list_final(al_service *svc, al_srv_gen *gen, al_drun *dr)
{
	const al_recovery *rec = al_drun_record(dr);
	char *json = NULL;
	al_result *res = NULL;
	if (al_drun_read_final(dr, &json) < 0 ||
	    al_result_from_json(json, strlen(json), &res, NULL) < 0) {
		al_logf(AL_LOG_WARN, al_drun_id(dr),
			"its final result does not parse; not listed");
		free(json);
		return;
	}
	al_srv_run *run = al_service_insert(svc, gen, rec->run_id, rec->tenant,
					    rec->principal, rec->created_ms,
					    false);
	if (run == NULL) {
		free(json);
		al_result_free(res);
		return;
	}
	/* Read from the disk when asked for: the table keeps no output. */
	free(json);
	pthread_mutex_lock(&svc->lock);
	run->status = al_srv_status_for(res->outcome, res->reason);
	run->outcome = res->outcome;
	pthread_mutex_unlock(&svc->lock);
	al_result_free(res);
	al_service_run_put(svc, run);
}

/* The admission of a run an earlier daemon admitted. */
static al_admission *resume(al_host *host, al_drun *dr)
{
	const al_recovery *rec = al_drun_record(dr);
	char *request = NULL, *facts = NULL;
	al_admission *adm = NULL;
	al_error *err = NULL;
	if (al_drun_read_request(dr, &request, &facts) == 0) {
		al_resume_info info = {
			.run_id = rec->run_id,
			.tenant = rec->tenant,
			.principal = rec->principal,
			.request_json = request,
			.provider = rec->provider,
			.facts_json = facts,
			.admitted_ms = rec->created_ms,
		};
		if (al_host_resume(host, &info, &adm, &err) < 0) {
			al_logf(AL_LOG_INFO, rec->run_id, "%s",
				al_error_get_message(err));
			al_error_free(err);
		}
	}
	free(request);
	free(facts);
	return adm;
}

/* Finishes a run whose supervisor is gone: with its recorded result, or
 * as lost; then lists it. */
static void finish_recovered(al_service *svc, al_srv_gen *gen, al_drun *dr,
			     bool with_result)
{
	al_admission *adm = resume(gen->host, dr);
	if (adm == NULL) {
		al_logf(AL_LOG_WARN, al_drun_id(dr),
			"its request cannot be read back; not listed");
		return;
	}
	al_result *raw = NULL;
	if (with_result)
		(void)al_drun_collect(dr, &raw);
	finished f = {NULL, 500, AL_OUTCOME_UNAVAILABLE};
	al_finish_options o = {.launched = true, .refusal = "lost",
			       .result_durable = raw != NULL};
	finish(NULL, gen->host, dr, adm, raw, &o, true, true, &f);
	if (f.json != NULL)
		list_final(svc, gen, dr);
	free(f.json);
}

/* A live run: listed as running, with a watcher thread. */
static int adopt(al_service *svc, al_srv_gen *gen, al_drun *dr)
{
	const al_recovery *rec = al_drun_record(dr);
	al_admission *adm = resume(gen->host, dr);
	if (adm == NULL)
		return -EINVAL;
	al_srv_run *run = al_service_insert(svc, gen, rec->run_id, rec->tenant,
					    rec->principal, rec->created_ms,
					    true);
	if (run == NULL) {
		al_admission_free(adm);
		return -ENOMEM;
	}
	pthread_attr_t attr;
	pthread_t tid;
	al_service_set_language(svc, run, al_admission_request(adm)->language);
	pthread_mutex_lock(&svc->lock);
	run->adopted = adm;
	run->drun = dr;
	run->launched = true;
	run->refs++; /* the watcher's */
	svc->workers++;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int rc = pthread_create(&tid, &attr, al_durable_adopted_main, run);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		/* Its supervisor goes on; the next start adopts it. */
		run->adopted = NULL;
		run->drun = NULL;
		run->refs--;
		svc->workers--;
		pthread_mutex_unlock(&svc->lock);
		al_admission_free(adm);
		al_service_run_put(svc, run);
		return -EAGAIN;
	}
	pthread_mutex_unlock(&svc->lock);
	al_service_run_put(svc, run);
	return 0;
}

/* Closes one audited start without an end, if it should be: 1 closed,
 * 0 left open (its run is still going and will end on its own), <0 on
 * failure. */
static int close_start(al_service *svc, al_host *host, const json_t *start)
{
	const char *id = json_string_value(json_object_get(start, "run_id"));
	const char *outcome = "unavailable", *reason = "lost";
	const char *detail = "not_persisted";
	al_result *fr = NULL;
	al_drun *dr = NULL;
	al_error *err = NULL;
	char *final = NULL;
	int rc = 0;

	if (id == NULL || al_durable_run_held(svc->durable, id))
		return 0; /* a live process (an `airlock run`) holds it */
	int orc = al_run_id_valid(id) ? al_durable_open_run(svc->durable, id,
							    &dr)
				      : -ENOENT;
	if (orc == 0) {
		/* Under the run's lock: one that has no final result yet is
		 * still going (adopted) and its own finishing audits it;
		 * one finished since the audit was read is left alone. */
		if (al_drun_read_final(dr, &final) < 0 ||
		    al_result_from_json(final, strlen(final), &fr, NULL) < 0 ||
		    al_host_audit_has(host, id, "run.finished") != 0)
			goto out;
		outcome = al_outcome_name(fr->outcome);
		reason = fr->reason;
		detail = "finished_unaudited";
	} else if (orc != -ENOENT) {
		rc = orc;
		goto out;
	}
	/* No run directory (the daemon that audited the start ended
	 * before it persisted the run: nothing was launched), or a final
	 * result that was never audited. */
	rc = al_host_audit_close_start(host, start, outcome, reason, detail,
				       &err);
	if (rc < 0)
		al_logf(AL_LOG_WARN, id, "cannot close its audited start: %s",
			al_error_get_message(err));
	else
		rc = 1;
out:
	al_error_free(err);
	al_result_free(fr);
	free(final);
	if (dr != NULL) {
		al_drun_unlock(dr);
		al_drun_free(dr);
	}
	return rc;
}

/* Every audited start gets exactly one terminal record
 * (docs/durability.md, "Recovery"), so the trail never shows a run
 * without an end.  The search begins where the last one left every
 * start closed (STATE_DIR/audit.mark). */
static void close_open_starts(al_service *svc, al_srv_gen *gen)
{
	json_t *starts = NULL, *start;
	al_error *err = NULL;
	char *from = al_durable_mark_read(svc->durable), *head = NULL;
	unsigned closed = 0, open = 0;
	size_t i;
	if (al_host_audit_open_starts(gen->host, from, &starts, &head, &err) <
	    0) {
		al_logf(AL_LOG_WARN, NULL,
			"cannot look for audited runs without an end: %s",
			al_error_get_message(err));
		al_error_free(err);
		free(from);
		return;
	}
	json_array_foreach(starts, i, start) {
		if (close_start(svc, gen->host, start) == 1)
			closed++;
		else
			open++;
	}
	if (closed > 0)
		al_logf(AL_LOG_INFO, NULL,
			"closed %u audited run(s) that had no end (unavailable "
			"/ lost)",
			closed);
	/* With a start still open (a run going on) the next search begins
	 * where this one did. */
	if (open == 0 && (from == NULL || strcmp(from, head) != 0) &&
	    al_durable_mark_write(svc->durable, head) < 0)
		al_logf(AL_LOG_WARN, NULL,
			"cannot record where the audit search ended");
	free(from);
	free(head);
	json_decref(starts);
}

int al_service_recover(al_service *svc)
{
	al_srv_gen *gen = al_service_gen_get(svc);
	char **ids = NULL;
	size_t n = 0;
	unsigned counts[AL_RECOVERED_TAMPERED + 1] = {0};
	int rc = al_durable_list(svc->durable, &ids, &n);

	if (gen == NULL || rc < 0) {
		al_service_gen_put(svc, gen);
		return rc < 0 ? rc : -ESHUTDOWN;
	}
	for (size_t i = 0; i < n; i++) {
		al_drun *dr = NULL;
		al_recovered kind;
		if (al_durable_recover(svc->durable, ids[i], &dr, &kind) < 0) {
			al_logf(AL_LOG_WARN, ids[i],
				"cannot be read; left as it is");
			continue;
		}
		counts[kind]++;
		switch (kind) {
		case AL_RECOVERED_FINAL:
			/* A daemon may have died between acknowledging and
			 * cleaning up: cleaning up again is harmless. */
			al_drun_cleanup(dr);
			list_final(svc, gen, dr);
			break;
		case AL_RECOVERED_RESULT:
		case AL_RECOVERED_LOST:
			finish_recovered(svc, gen, dr,
					 kind == AL_RECOVERED_RESULT);
			break;
		case AL_RECOVERED_LIVE:
		case AL_RECOVERED_FOREIGN:
			if (adopt(svc, gen, dr) == 0)
				dr = NULL; /* the watcher's now */
			break;
		case AL_RECOVERED_TAMPERED:
			al_logf(AL_LOG_WARN, ids[i],
				"unreadable or tampered records: treated as "
				"lost, "
				"not listed");
			break;
		}
		al_drun_free(dr);
	}
	al_strv_free(ids, n);
	close_open_starts(svc, gen);
	al_service_gen_put(svc, gen);
	if (n > 0)
		al_logf(AL_LOG_INFO, NULL,
			"recovered %zu run(s) at epoch %llu: %u finished, %u "
			"finished now, %u adopted, %u owned by a newer epoch, "
			"%u "
			"lost, %u unreadable",
			n, (unsigned long long)al_durable_epoch(svc->durable),
			counts[AL_RECOVERED_FINAL], counts[AL_RECOVERED_RESULT],
			counts[AL_RECOVERED_LIVE], counts[AL_RECOVERED_FOREIGN],
			counts[AL_RECOVERED_LOST],
			counts[AL_RECOVERED_TAMPERED]);
	return 0;
}
