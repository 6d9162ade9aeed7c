/* Durable runs in the service (docs/durability.md): an admitted run is
 * persisted, handed to its supervisor, watched (live output tailed from
 * the run's directory), escalated when a stop or the deadline is overdue,
 * and finished exactly once under the run's lock.  At start-up every run
 * directory is classified: finished ones are listed, live ones adopted
 * (a watcher each), the rest finished as recorded or as lost. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/json.h>

#include "core/util.h"
#include "server/service.h"
#include "supervisor/fault.h"

/* A stop escalates to killing the tree when the run has not ended this
 * long after it: the provider's TERM-to-KILL grace plus margin. */
#define STOP_ESCALATE_MS (AL_DEFAULT_GRACE_MS + 2500)
/* The supervisor enforces the deadline itself; the daemon steps in only
 * when it is this far past it (a supervisor stopped or stuck). */
#define DEADLINE_BACKSTOP_MS 15000
#define TICK_MS 50

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
static void finish(al_host *host, al_drun *dr, al_admission *adm,
		   al_result *raw, const al_finish_options *base, bool recovered,
		   finished *f)
{
	al_finish_options o = *base;
	al_result *res = NULL;
	char *final = NULL;
	char run_id[40];

	snprintf(run_id, sizeof(run_id), "%s", al_drun_id(dr));
	if (al_drun_lock(dr) < 0)
		fprintf(stderr, "airlockd: run %s: cannot lock it to finish\n",
			run_id);
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
		if (f->json != NULL && al_drun_write_final(dr, f->json) < 0)
			fprintf(stderr, "airlockd: run %s: cannot record its "
					"final result\n",
				run_id);
	}
	al_result_free(res);
	al_drun_unlock(dr);
	al_drun_cleanup(dr);
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
			     finished *f)
{
	al_service *svc = run->svc;
	int64_t deadline = al_drun_record(dr)->deadline_ms;
	bool killed_stop = false, killed_deadline = false, gave_up = false;
	int ticks = 0;

	for (;;) {
		int ended = al_drun_wait(dr, TICK_MS);
		(void)al_drun_tail(dr, al_service_output, run);
		if (ended)
			break;
		if (++ticks == 4)
			al_fault_point("during_run");
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
			fprintf(stderr, "airlockd: run %s: cannot end it: %s\n",
				al_drun_id(dr), strerror(-rc));
			gave_up = true; /* keep watching */
		}
	}
	(void)al_drun_tail(dr, al_service_output, run);

	al_result *raw = NULL;
	(void)al_drun_collect(dr, &raw);
	if (raw != NULL)
		al_fault_point("after_result");
	else if (killed_stop)
		raw = made_result(dr, AL_OUTCOME_INTERRUPTED);
	else if (killed_deadline)
		raw = made_result(dr, AL_OUTCOME_TIMED_OUT);
	al_finish_options o = {.launched = true, .refusal = "lost"};
	finish(run->gen->host, dr, adm, raw, &o, false, f);
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

static void retire_drun(al_srv_run *run)
{
	al_service *svc = run->svc;
	pthread_mutex_lock(&svc->lock);
	al_drun *dr = run->drun;
	run->drun = NULL;
	while (run->drun_users > 0)
		pthread_cond_wait(&run->changed, &svc->lock);
	pthread_mutex_unlock(&svc->lock);
	al_drun_free(dr);
}

char *al_durable_execute(al_srv_run *run, al_admission *adm,
			 unsigned *status, al_outcome *outcome)
{
	al_service *svc = run->svc;
	al_host *host = run->gen->host;
	const al_request *req = al_admission_request(adm);
	size_t n_env = 0;
	const char *const *env = al_admission_host_env(adm, &n_env);
	char *facts = al_facts_to_json(al_admission_facts(adm), 0);
	int64_t created = al_admission_admitted_ms(adm);
	al_launch_spec spec = {
		.run_id = al_admission_run_id(adm),
		.tenant = al_admission_tenant(adm),
		.principal = al_admission_principal(adm),
		.provider = al_admission_provider(adm),
		.provider_config = al_admission_provider_config(adm),
		.request_json = al_admission_request_json(adm),
		.facts_json = facts,
		.host_env = env,
		.n_host_env = n_env,
		.created_ms = created,
		.deadline_ms = created + (int64_t)req->limits.wall_ms +
			       (int64_t)al_admission_grace_ms(adm),
	};
	finished f = {NULL, 500, AL_OUTCOME_UNAVAILABLE};
	al_result *res = NULL;
	al_error *err = NULL;
	al_drun *dr = NULL;
	char run_id[40];

	snprintf(run_id, sizeof(run_id), "%s", spec.run_id);
	/* An idle supervisor ready for it (docs/durability.md). */
	bool warm = false;
	if (svc->idle_sups != NULL)
		spec.idle = al_idle_pool_take(svc->idle_sups, spec.provider,
					      spec.provider_config,
					      req->language, &warm);
	if (al_drun_create(svc->durable, &spec, &dr, &err) < 0) {
		al_idle_discard(spec.idle);
		/* Nothing persisted, nothing launched. */
		fprintf(stderr, "airlockd: run %s: %s\n", run_id,
			al_error_get_message(err));
		al_error_free(err);
		al_service_announce(run, run_id);
		al_finish_options o = {.refusal = "workspace_setup_failed"};
		if (al_host_finish(host, adm, NULL, &o, &res) == 0)
			finished_from(&f, res);
		al_result_free(res);
		free(facts);
		goto out;
	}
	pthread_mutex_lock(&svc->lock);
	run->has_dir = true;
	pthread_mutex_unlock(&svc->lock);
	/* Persisted: the inbox takes events and the id may be handed out. */
	publish_drun(run, dr, false);
	al_service_announce(run, run_id);
	int rc = al_drun_start(dr, &spec, &err);
	free(facts);
	if (rc == 0 && svc->idle_sups != NULL)
		al_idle_pool_count(svc->idle_sups, al_drun_handed_off(dr), warm);
	if (rc < 0) {
		fprintf(stderr, "airlockd: run %s: %s\n", run_id,
			al_error_get_message(err));
		al_error_free(err);
		al_finish_options o = {.refusal = "start_failed"};
		finish(host, dr, adm, NULL, &o, false, &f);
		retire_drun(run);
		goto out;
	}
	publish_drun(run, dr, true);
	/* An interrupt that came while it was being launched. */
	if (al_cancel_state(run->cancel) != AL_CANCEL_NONE)
		(void)al_drun_control(dr, AL_CONTROL_INTERRUPT);
	watch_and_finish(run, dr, adm, &f);
	retire_drun(run);
out:
	*status = f.status;
	*outcome = f.outcome;
	return f.json;
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
	watch_and_finish(run, dr, adm, &f);
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
		fprintf(stderr, "airlockd: run %s: its final result does not "
				"parse; not listed\n",
			al_drun_id(dr));
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
			fprintf(stderr, "airlockd: run %s: %s\n", rec->run_id,
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
		fprintf(stderr, "airlockd: run %s: its request cannot be "
				"read back; not listed\n",
			al_drun_id(dr));
		return;
	}
	al_result *raw = NULL;
	if (with_result)
		(void)al_drun_collect(dr, &raw);
	finished f = {NULL, 500, AL_OUTCOME_UNAVAILABLE};
	al_finish_options o = {.launched = true, .refusal = "lost"};
	finish(gen->host, dr, adm, raw, &o, true, &f);
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
			fprintf(stderr, "airlockd: run %s: cannot be read; "
					"left as it is\n",
				ids[i]);
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
			fprintf(stderr, "airlockd: run %s: unreadable or "
					"tampered records: treated as lost, "
					"not listed\n",
				ids[i]);
			break;
		}
		al_drun_free(dr);
	}
	al_strv_free(ids, n);
	al_service_gen_put(svc, gen);
	if (n > 0)
		fprintf(stderr,
			"airlockd: recovered %zu run(s) at epoch %llu: %u "
			"finished, %u finished now, %u adopted, %u owned by a "
			"newer epoch, %u lost, %u unreadable\n",
			n, (unsigned long long)al_durable_epoch(svc->durable),
			counts[AL_RECOVERED_FINAL], counts[AL_RECOVERED_RESULT],
			counts[AL_RECOVERED_LIVE], counts[AL_RECOVERED_FOREIGN],
			counts[AL_RECOVERED_LOST],
			counts[AL_RECOVERED_TAMPERED]);
	return 0;
}
