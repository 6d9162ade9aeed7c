/* Kit helpers: building requests, running them (with timed cancel,
 * interrupt and a watchdog), checking every result's shape, describing
 * results in failure messages. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <airlock/error.h>

#include "core/util.h"
#include "kit/kit.h"

void kit_sleep_ms(uint64_t ms)
{
	struct timespec ts = {.tv_sec = (time_t)(ms / 1000),
			      .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- verdicts -------------------------------------------------------- */

/* The first verdict stands: later ones are follow-ons of the first. */
static void decide(kit_case *c, al_kit_status st, char *reason)
{
	if (c->decided) {
		free(reason);
		return;
	}
	c->decided = true;
	c->status = st;
	free(c->reason);
	c->reason = reason;
}

static char *vformat(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		return strdup("(out of memory formatting the reason)");
	return s;
}

void kit_pass(kit_case *c)
{
	decide(c, AL_KIT_PASS, NULL);
}

void kit_fail(kit_case *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	decide(c, AL_KIT_FAIL, vformat(fmt, ap));
	va_end(ap);
}

void kit_skip(kit_case *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	decide(c, AL_KIT_SKIP, vformat(fmt, ap));
	va_end(ap);
}

bool kit_need_runner(kit_ctx *k, kit_case *c)
{
	if (k->facts == NULL) {
		kit_skip(c, "the probe gave no facts");
		return false;
	}
	if (k->facts->safety_class == AL_SAFETY_DISABLED) {
		kit_skip(c, "facts: safety class disabled, no program runs "
			    "(checked by the disabled.* cases)");
		return false;
	}
	if (!k->facts->available) {
		kit_skip(c, "facts: unavailable (%s); checked by "
			    "unavailable.refuses",
			 k->facts->unavailable_reason != NULL
				 ? k->facts->unavailable_reason
				 : "no reason given");
		return false;
	}
	if (k->lang == NULL) {
		kit_skip(c, "facts: none of sh, python, bash is present");
		return false;
	}
	if (k->handle == NULL) {
		kit_fail(c, "no provider handle: ensure failed (%s)",
			 k->ensure_error != NULL ? k->ensure_error : "?");
		return false;
	}
	return true;
}

bool kit_need_language(kit_ctx *k, kit_case *c, const char *language)
{
	if (!kit_need_runner(k, c))
		return false;
	if (al_facts_find_language(k->facts, language) == NULL) {
		kit_skip(c, "facts: language %s absent", language);
		return false;
	}
	return true;
}

/* ---- requests -------------------------------------------------------- */

al_request *kit_req_lang(kit_ctx *k, kit_case *c, const char *language,
			 const char *code)
{
	al_request *req = al_request_new();
	if (req == NULL)
		goto oom;
	req->language = strdup(language);
	al_bytes_clear(&req->code); /* al_bytes_set does not free */
	if (req->language == NULL ||
	    al_bytes_set(&req->code, code, strlen(code)) < 0)
		goto oom;
	req->grant.network = k->network;
	req->grant.workspace = k->workspace;
	return req;
oom:
	al_request_free(req);
	kit_fail(c, "out of memory building a request");
	return NULL;
}

al_request *kit_req(kit_ctx *k, kit_case *c, const char *sh_code,
		    const char *py_code)
{
	return kit_req_lang(k, c, k->lang, k->lang_is_python ? py_code : sh_code);
}

int kit_req_stdin(al_request *req, const void *data, size_t len)
{
	req->has_stdin = true;
	al_bytes_clear(&req->stdin_data);
	return al_bytes_set(&req->stdin_data, data, len);
}

int kit_req_argv(al_request *req, const char *const *argv, size_t argc)
{
	char **v = NULL;
	if (al_strv_dup((char *const *)argv, argc, &v) < 0)
		return -ENOMEM;
	al_strv_free(req->argv, req->argc);
	req->argv = v;
	req->argc = argc;
	return 0;
}

int kit_req_env(al_request *req, const char *name, const char *value)
{
	al_env_var *grown =
		realloc(req->env, (req->n_env + 1) * sizeof(*grown));
	if (grown == NULL)
		return -ENOMEM;
	req->env = grown;
	char *n = strdup(name), *v = strdup(value);
	if (n == NULL || v == NULL) {
		free(n);
		free(v);
		return -ENOMEM;
	}
	req->env[req->n_env].name = n;
	req->env[req->n_env].value = v;
	req->n_env++;
	return 0;
}

void kit_req_limit(al_request *req, unsigned bit, uint64_t value)
{
	al_limits *l = &req->limits;
	switch (bit) {
	case AL_LIMIT_WALL_MS: l->wall_ms = value; break;
	case AL_LIMIT_CPU_MS: l->cpu_ms = value; break;
	case AL_LIMIT_MEMORY_BYTES: l->memory_bytes = value; break;
	case AL_LIMIT_PIDS: l->pids = value; break;
	case AL_LIMIT_OUTPUT_BYTES: l->output_bytes = value; break;
	case AL_LIMIT_FILE_BYTES: l->file_bytes = value; break;
	case AL_LIMIT_WORKSPACE_BYTES: l->workspace_bytes = value; break;
	case AL_LIMIT_OPEN_FILES: l->open_files = value; break;
	case AL_LIMIT_SOCKET_BYTES: l->socket_bytes = value; break;
	case AL_LIMIT_STACK_BYTES: l->stack_bytes = value; break;
	default: return;
	}
	l->set |= bit;
}

/* ---- tokens and host checks ------------------------------------------ */

void kit_token(kit_ctx *k, char *buf, size_t len)
{
	pthread_mutex_lock(&k->lock);
	unsigned long n = ++k->run_seq;
	pthread_mutex_unlock(&k->lock);
	snprintf(buf, len, "kt%ldx%lu", (long)getpid(), n);
}

void kit_host_path(kit_ctx *k, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", k->hostdir, name);
}

bool kit_host_pid_alive(long pid, const char *comm)
{
	char path[64], buf[512];
	if (pid <= 1 || kill((pid_t)pid, 0) < 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) S ...": a zombie has ended; the name rules out a
	 * reused pid when the caller knows it. */
	char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	if (open == NULL || close == NULL || close[1] == '\0')
		return false;
	if (close[2] == 'Z' || close[2] == 'X')
		return false;
	*close = '\0';
	return comm == NULL || strcmp(open + 1, comm) == 0;
}

bool kit_host_visible(const kit_ctx *k)
{
	return k->facts != NULL &&
	       k->facts->safety_class == AL_SAFETY_TRUSTED_LOCAL &&
	       !k->facts->isolation.host_filesystem_restricted &&
	       !k->facts->isolation.process_contained;
}

/* ---- describing results ---------------------------------------------- */

static void escape_into(char *dst, size_t cap, const al_bytes *b, size_t max)
{
	size_t o = 0;
	for (size_t i = 0; i < b->len && i < max && o + 5 < cap; i++) {
		unsigned char ch = b->data[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '\\')
			dst[o++] = (char)ch;
		else
			o += (size_t)snprintf(dst + o, cap - o, "\\x%02x", ch);
	}
	if (b->len > max && o + 4 < cap) {
		memcpy(dst + o, "...", 3);
		o += 3;
	}
	dst[o < cap ? o : cap - 1] = '\0';
}

const char *kit_describe(const al_result *res)
{
	static __thread char buf[1024];
	char so[320], se[320], code[32] = "-", sig[32] = "-";
	if (res == NULL)
		return "no result";
	escape_into(so, sizeof(so), &res->output[AL_STDOUT], 60);
	escape_into(se, sizeof(se), &res->output[AL_STDERR], 60);
	if (res->has_exit_code)
		snprintf(code, sizeof(code), "%d", res->exit_code);
	if (res->has_signal)
		snprintf(sig, sizeof(sig), "%d", res->signal);
	const char *on = al_outcome_name(res->outcome);
	snprintf(buf, sizeof(buf),
		 "outcome=%s reason=%s exit_code=%s signal=%s stdout=\"%s\" "
		 "stderr=\"%s\"",
		 on != NULL ? on : "(out of range)",
		 res->reason != NULL ? res->reason : "null", code, sig, so, se);
	return buf;
}

const char *kit_out(const al_result *res, int stream)
{
	return (const char *)res->output[stream].data;
}

bool kit_out_has(const al_result *res, int stream, const char *needle)
{
	const al_bytes *b = &res->output[stream];
	return memmem(b->data, b->len, needle, strlen(needle)) != NULL;
}

bool kit_expect_outcome(kit_case *c, const kit_run *r, al_outcome outcome)
{
	if (r->res->outcome == outcome)
		return true;
	kit_fail(c, "expected outcome %s, saw %s", al_outcome_name(outcome),
		 kit_describe(r->res));
	return false;
}

bool kit_run_code(kit_ctx *k, kit_case *c, const char *sh_code,
		  const char *py_code, al_outcome outcome, kit_run *r)
{
	if (!kit_need_runner(k, c))
		return false;
	al_request *req = kit_req(k, c, sh_code, py_code);
	if (req == NULL)
		return false;
	bool ok = kit_exec(k, c, req, NULL, r) == 0 &&
		  kit_expect_outcome(c, r, outcome);
	al_request_free(req);
	return ok;
}

bool kit_expect_refusal(kit_case *c, const kit_run *r, al_outcome outcome)
{
	if (!kit_expect_outcome(c, r, outcome))
		return false;
	const al_result *res = r->res;
	if (res->has_exit_code || res->has_signal || res->output_seen[0] ||
	    res->output_seen[1] || res->output[0].len || res->output[1].len) {
		kit_fail(c, "refusal %s carries process fields: %s",
			 al_outcome_name(outcome), kit_describe(res));
		return false;
	}
	return true;
}

/* ---- shape checking --------------------------------------------------- */

static void shape_problem(kit_ctx *k, const char *cname, const char *why)
{
	pthread_mutex_lock(&k->lock);
	char *s = al_strdup_printf("%s%s%s: %s",
				   k->shape_problems ? k->shape_problems : "",
				   k->shape_problems ? "; " : "", cname, why);
	if (s != NULL) {
		free(k->shape_problems);
		k->shape_problems = s;
	}
	pthread_mutex_unlock(&k->lock);
}

static void check_shape(kit_ctx *k, const char *cname, const kit_run *r)
{
	const al_result *res = r->res;
	pthread_mutex_lock(&k->lock);
	k->shape_checked++;
	if ((unsigned)res->outcome < AL_OUTCOME__COUNT)
		k->observed |= 1u << res->outcome;
	pthread_mutex_unlock(&k->lock);

	char why[512];
	if (al_result_check_shape(res) < 0) {
		snprintf(why, sizeof(why), "al_result_check_shape refused %s",
			 kit_describe(res));
		shape_problem(k, cname, why);
	}
	for (int s = 0; s < 2; s++) {
		const char *sn = s == AL_STDOUT ? "stdout" : "stderr";
		bool ran = al_outcome_ran(res->outcome);
		if (ran && res->output[s].len > res->output_seen[s]) {
			snprintf(why, sizeof(why),
				 "%s keeps %zu bytes but saw only %llu", sn,
				 res->output[s].len,
				 (unsigned long long)res->output_seen[s]);
			shape_problem(k, cname, why);
		}
		if (ran && res->truncated[s] !=
				   (res->output_seen[s] > res->output[s].len)) {
			snprintf(why, sizeof(why),
				 "%s_truncated=%d but kept %zu of %llu", sn,
				 res->truncated[s], res->output[s].len,
				 (unsigned long long)res->output_seen[s]);
			shape_problem(k, cname, why);
		}
	}
	if (res->run_id[0] != '\0' && strcmp(res->run_id, r->run_id) != 0) {
		snprintf(why, sizeof(why), "run_id differs from the exec's");
		shape_problem(k, cname, why);
	}
	if (al_outcome_ran(res->outcome) &&
	    res->usage.wall_ms > r->elapsed_ms + 1000) {
		snprintf(why, sizeof(why),
			 "usage.wall_ms %llu but execute took %llu ms",
			 (unsigned long long)res->usage.wall_ms,
			 (unsigned long long)r->elapsed_ms);
		shape_problem(k, cname, why);
	}
	if (res->started_at_ms != 0 && res->finished_at_ms != 0 &&
	    res->finished_at_ms < res->started_at_ms) {
		snprintf(why, sizeof(why), "finished_at before started_at");
		shape_problem(k, cname, why);
	}
}

/* ---- execution with timers -------------------------------------------- */

typedef struct exec_timer {
	pthread_mutex_t m;
	pthread_cond_t cv;
	bool done;
	kit_ctx *k;
	al_cancel *cancel;
	const char *run_id;
	const kit_exec_opts *opts;
	uint64_t t0;
	uint64_t watchdog_ms;
	bool watchdog_fired;
	int interrupt_rc;
	uint64_t stopped_at_ms;
} exec_timer;

static void *timer_main(void *arg)
{
	exec_timer *t = arg;
	const kit_exec_opts *o = t->opts;
	uint64_t cancel_at = o->cancel_after_ms, intr_at = o->interrupt_after_ms;
	uint64_t intr_give_up = intr_at + 5000;
	bool cancel_due = cancel_at != 0, intr_due = intr_at != 0;
	bool wd_due = true;
	bool waiting = o->started_file != NULL && (cancel_due || intr_due);

	pthread_mutex_lock(&t->m);
	while (!t->done) {
		uint64_t now = al_mono_ms() - t->t0;
		if (waiting && (access(o->started_file, F_OK) == 0 ||
				now >= KIT_STARTED_WAIT_MS)) {
			waiting = false;
			cancel_at += now;
			intr_at += now;
			intr_give_up += now;
		}
		if (!waiting && cancel_due && now >= cancel_at) {
			al_cancel_fire(t->cancel, o->cancel_kind);
			t->stopped_at_ms = now;
			cancel_due = false;
			continue;
		}
		if (!waiting && intr_due && now >= intr_at) {
			if (t->stopped_at_ms == 0)
				t->stopped_at_ms = now;
			al_error *err = NULL;
			pthread_mutex_unlock(&t->m);
			int rc = t->k->ops->interrupt(t->k->handle, t->run_id,
						      &err);
			al_error_free(err);
			pthread_mutex_lock(&t->m);
			t->interrupt_rc = rc;
			/* The run may not be registered yet: retry briefly. */
			if (rc == -ESRCH && now < intr_give_up && !t->done)
				intr_at = now + 20;
			else
				intr_due = false;
			continue;
		}
		if (wd_due && now >= t->watchdog_ms) {
			al_cancel_fire(t->cancel, AL_CANCEL_CANCELLED);
			t->watchdog_fired = true;
			wd_due = false;
			continue;
		}
		uint64_t next = UINT64_MAX;
		if (waiting)
			next = now + 10;
		else if (cancel_due)
			next = cancel_at;
		if (!waiting && intr_due && intr_at < next)
			next = intr_at;
		if (wd_due && t->watchdog_ms < next)
			next = t->watchdog_ms;
		if (next == UINT64_MAX) {
			pthread_cond_wait(&t->cv, &t->m);
			continue;
		}
		uint64_t abs = t->t0 + next;
		struct timespec ts = {.tv_sec = (time_t)(abs / 1000),
				      .tv_nsec = (long)(abs % 1000) * 1000000L};
		pthread_cond_timedwait(&t->cv, &t->m, &ts);
	}
	pthread_mutex_unlock(&t->m);
	return NULL;
}

void kit_run_clear(kit_run *r)
{
	al_result_free(r->res);
	free(r->error);
	memset(r, 0, sizeof(*r));
}

int kit_exec(kit_ctx *k, kit_case *c, const al_request *req,
	     const kit_exec_opts *opts, kit_run *out)
{
	static const kit_exec_opts none;
	int ret = -ENOMEM;
	al_request *copy = NULL;
	al_cancel *cancel = NULL;
	exec_timer t;
	pthread_t tid;
	bool timer_init = false;

	memset(out, 0, sizeof(*out));
	if (opts == NULL)
		opts = &none;
	/* A run id as a host makes them (UUID v4): a remote provider
	 * forwards it and the remote accepts no other shape. */
	al_run_id_new(out->run_id);
	/* Providers get requests with defaults applied (al_exec's rule). */
	copy = al_request_dup(req);
	cancel = al_cancel_new();
	out->res = al_result_new();
	if (copy == NULL || cancel == NULL || out->res == NULL) {
		kit_fail(c, "kit: out of resources preparing a run");
		goto out;
	}
	al_limits_apply_defaults(&copy->limits);

	memset(&t, 0, sizeof(t));
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&t.m, NULL);
	pthread_cond_init(&t.cv, &ca);
	pthread_condattr_destroy(&ca);
	timer_init = true;
	t.k = k;
	t.cancel = cancel;
	t.run_id = out->run_id;
	t.opts = opts;
	t.watchdog_ms = copy->limits.wall_ms + AL_DEFAULT_GRACE_MS + 20000;
	t.t0 = al_mono_ms();
	if (pthread_create(&tid, NULL, timer_main, &t) != 0) {
		kit_fail(c, "kit: cannot start its timer thread");
		goto out;
	}

	al_exec ex = {
		AL_ABI_HEADER(al_exec),
		.run_id = out->run_id,
		.request = copy,
		.on_output = opts->on_output,
		.on_output_ctx = opts->on_output_ctx,
		.cancel = cancel,
		.host_env = opts->host_env,
		.n_host_env = opts->n_host_env,
		.tool_dir = opts->tool_dir,
		.tool_bin_dir = opts->tool_bin_dir,
		.tool_token = opts->tool_token,
		.inbox_dir = opts->inbox_dir,
		.inbox_acks_dir = opts->inbox_acks_dir,
	};
	al_error *err = NULL;
	out->rc = k->ops->execute(k->handle, &ex, out->res, &err);
	out->elapsed_ms = al_mono_ms() - t.t0;

	pthread_mutex_lock(&t.m);
	t.done = true;
	pthread_cond_signal(&t.cv);
	pthread_mutex_unlock(&t.m);
	pthread_join(tid, NULL);
	out->watchdog_fired = t.watchdog_fired;
	out->interrupt_rc = t.interrupt_rc;
	out->stopped_at_ms = t.stopped_at_ms;

	if (out->rc < 0) {
		out->error = strdup(al_error_get_message(err));
		kit_fail(c, "execute returned %d (%s) instead of a result",
			 out->rc, al_error_get_message(err));
		al_error_free(err);
		al_result_free(out->res);
		out->res = NULL;
		ret = out->rc;
		goto out;
	}
	al_error_free(err);
	check_shape(k, c->name, out);
	if (out->watchdog_fired) {
		kit_fail(c, "the run overran its wall limit by 20 s; the kit "
			    "had to cancel it (%s)",
			 kit_describe(out->res));
		ret = -ETIMEDOUT;
		goto out;
	}
	ret = 0;
out:
	if (timer_init) {
		pthread_cond_destroy(&t.cv);
		pthread_mutex_destroy(&t.m);
	}
	al_cancel_free(cancel);
	al_request_free(copy);
	return ret;
}
