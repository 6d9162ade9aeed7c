/* Kit cases about time and process trees: the wall limit (TERM, grace,
 * KILL), leftovers killed, caller cancellation, interrupt by run id,
 * concurrency (private temp dirs, one handle from 16 threads). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kit/kit.h"
#include "kit/kit_cases.h"

/* ---- leftovers --------------------------------------------------------- */

/* When the facts say the program's pids and files are the host's own
 * (trusted local, no filesystem restriction), the program writes its
 * background child's pid to a kit file and the kit checks from the host
 * that the child is gone.  Elsewhere the pid would be meaningless here. */
static int pidfile_env(kit_ctx *k, al_request *req, char *path, size_t len)
{
	char tok[40], name[64];
	path[0] = '\0';
	if (!kit_host_visible(k))
		return 0;
	kit_token(k, tok, sizeof(tok));
	snprintf(name, sizeof(name), "pid-%s", tok);
	kit_host_path(k, name, path, len);
	return kit_req_env(req, "KIT_PIDFILE", path);
}

/* Returns true when the host check passed (or was not applicable). */
static bool host_tree_gone(kit_case *c, const char *pidfile)
{
	if (pidfile[0] == '\0')
		return true;
	long pid = 0;
	FILE *f = fopen(pidfile, "re");
	if (f == NULL || fscanf(f, "%ld", &pid) != 1) {
		if (f != NULL)
			fclose(f);
		kit_fail(c, "the program did not record its background pid "
			    "(it had not started when it was stopped?)");
		return false;
	}
	fclose(f);
	unlink(pidfile);
	/* The provider returned; give the kernel a moment to finish the
	 * kill it already sent. */
	for (int i = 0; i < 20 && kit_host_pid_alive(pid, NULL); i++)
		kit_sleep_ms(50);
	if (kit_host_pid_alive(pid, NULL)) {
		kit_fail(c, "the run's background process %ld is still alive "
			    "on the host after the run returned",
			 pid);
		return false;
	}
	return true;
}

#define SH_BG_CHILD                                                         \
	"sleep 30 &\n"                                                      \
	"[ -n \"$KIT_PIDFILE\" ] && echo $! > \"$KIT_PIDFILE\"\n"
#define PY_BG_CHILD                                                         \
	"import os, time\n"                                                 \
	"pid = os.fork()\n"                                                 \
	"if pid == 0:\n"                                                    \
	"    time.sleep(30)\n"                                              \
	"    os._exit(0)\n"                                                 \
	"if os.environ.get('KIT_PIDFILE'):\n"                               \
	"    open(os.environ['KIT_PIDFILE'], 'w').write(str(pid))\n"

void kit_case_leftover_killed(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	al_request *req = NULL;
	char pidfile[PATH_MAX];
	if (!kit_need_runner(k, c))
		return;
	/* The background child keeps stdout open: a provider that waits
	 * for EOF instead of ending the tree would take 30 s. */
	req = kit_req(k, c, SH_BG_CHILD "echo main-done\nexit 0\n",
		      PY_BG_CHILD "print('main-done')\n");
	if (req == NULL || pidfile_env(k, req, pidfile, sizeof(pidfile)) < 0)
		goto out;
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	if (r.elapsed_ms > 5000)
		kit_fail(c, "the main program exited at once but execute "
			    "returned after %llu ms (waited for a leftover?)",
			 (unsigned long long)r.elapsed_ms);
	else if (strcmp(kit_out(r.res, AL_STDOUT), "main-done\n") != 0)
		kit_fail(c, "expected stdout \"main-done\\n\"; saw %s",
			 kit_describe(r.res));
	else if (host_tree_gone(c, pidfile))
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}

/* ---- the wall limit ---------------------------------------------------- */

void kit_case_limit_wall(kit_ctx *k, kit_case *c)
{
	kit_run r = {0};
	al_request *req = NULL;
	char pidfile[PATH_MAX];
	const uint64_t wall = 1000;
	req = kit_req(k, c,
		      SH_BG_CHILD
		      "trap 'echo got-term >&2' TERM\n"
		      "while :; do sleep 0.1; done\n",
		      PY_BG_CHILD
		      "import signal, sys\n"
		      "def h(s, f):\n"
		      "    sys.stderr.write('got-term\\n')\n"
		      "    sys.stderr.flush()\n"
		      "signal.signal(signal.SIGTERM, h)\n"
		      "while True:\n"
		      "    time.sleep(0.1)\n");
	if (req == NULL || pidfile_env(k, req, pidfile, sizeof(pidfile)) < 0)
		goto out;
	kit_req_limit(req, AL_LIMIT_WALL_MS, wall);
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_TIMED_OUT))
		goto out;
	if (r.res->has_exit_code) {
		kit_fail(c, "a timed-out result must carry no exit code: %s",
			 kit_describe(r.res));
	} else if (!kit_out_has(r.res, AL_STDERR, "got-term")) {
		kit_fail(c, "the program traps TERM and writes \"got-term\": "
			    "TERM must come before KILL; saw %s",
			 kit_describe(r.res));
	} else if (r.elapsed_ms < wall + 250) {
		/* The program ignores TERM, so only KILL ends it: returning
		 * sooner than wall + a grace means no grace was given. */
		kit_fail(c, "returned %llu ms after start: the KILL came "
			    "without a grace after TERM",
			 (unsigned long long)r.elapsed_ms);
	} else if (r.elapsed_ms > wall + AL_DEFAULT_GRACE_MS + 5000) {
		kit_fail(c, "wall limit %llu ms but execute returned after "
			    "%llu ms",
			 (unsigned long long)wall,
			 (unsigned long long)r.elapsed_ms);
	} else if (r.res->usage.wall_ms != 0 && r.res->usage.wall_ms < wall) {
		kit_fail(c, "usage.wall_ms %llu is below the wall limit it "
			    "passed",
			 (unsigned long long)r.res->usage.wall_ms);
	} else if (host_tree_gone(c, pidfile)) {
		kit_pass(c);
	}
out:
	kit_run_clear(&r);
	al_request_free(req);
}

/* ---- cancel and interrupt ------------------------------------------- */

static void stop_case(kit_ctx *k, kit_case *c, bool interrupt)
{
	kit_run r = {0};
	al_request *req = NULL;
	char pidfile[PATH_MAX];
	kit_exec_opts o = {0};
	al_outcome want =
		interrupt ? AL_OUTCOME_INTERRUPTED : AL_OUTCOME_CANCELLED;
	if (!kit_need_runner(k, c))
		return;
	req = kit_req(k, c, SH_BG_CHILD "sleep 30\n",
		      PY_BG_CHILD "time.sleep(30)\n");
	if (req == NULL || pidfile_env(k, req, pidfile, sizeof(pidfile)) < 0)
		goto out;
	if (interrupt) {
		o.interrupt_after_ms = 200;
	} else {
		o.cancel_after_ms = 200;
		o.cancel_kind = AL_CANCEL_CANCELLED;
	}
	/* 200 ms after the program runs, when the kit can see it start. */
	if (pidfile[0] != '\0')
		o.started_file = pidfile;
	if (kit_exec(k, c, req, &o, &r) < 0)
		goto out;
	if (interrupt && r.interrupt_rc != 0) {
		kit_fail(c, "ops->interrupt(run_id) returned %d for a live run",
			 r.interrupt_rc);
		goto out;
	}
	if (!kit_expect_outcome(c, &r, want))
		goto out;
	if (r.res->has_exit_code)
		kit_fail(c, "%s must carry no exit code: %s",
			 al_outcome_name(want), kit_describe(r.res));
	else if (r.elapsed_ms - r.stopped_at_ms > AL_DEFAULT_GRACE_MS + 3000)
		kit_fail(c, "stopped at %llu ms but execute returned after "
			    "%llu ms",
			 (unsigned long long)r.stopped_at_ms,
			 (unsigned long long)r.elapsed_ms);
	else if (host_tree_gone(c, pidfile))
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}

void kit_case_cancel(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	stop_case(k, c, false);
}

void kit_case_interrupt(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	stop_case(k, c, true);
}

void kit_case_interrupt_unknown(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	al_error *err = NULL;
	if (!kit_need_runner(k, c))
		return;
	int rc = k->ops->interrupt(k->handle, "kit-no-such-run", &err);
	al_error_free(err);
	if (rc != -ESRCH)
		kit_fail(c, "interrupt of an unknown run id: expected -ESRCH "
			    "(%d), saw %d",
			 -ESRCH, rc);
	else
		kit_pass(c);
}

/* ---- concurrency --------------------------------------------------------- */

typedef struct par_run {
	kit_ctx *k;
	const al_request *req;
	kit_case c; /* private: kit_fail is per case, not thread-safe */
	kit_run r;
	int rc;
} par_run;

static void *par_main(void *arg)
{
	par_run *p = arg;
	p->rc = kit_exec(p->k, &p->c, p->req, NULL, &p->r);
	return NULL;
}

/* Runs reqs[i] concurrently; returns how many threads started. */
static size_t run_parallel(par_run *p, size_t n)
{
	pthread_t tids[16];
	size_t started = 0;
	for (size_t i = 0; i < n && i < 16; i++) {
		if (pthread_create(&tids[i], NULL, par_main, &p[i]) != 0)
			break;
		started++;
	}
	for (size_t i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	return started;
}

void kit_case_private_temp(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	enum { N = 8 };
	par_run p[N];
	al_request *reqs[N] = {0};
	char toks[N][48];
	memset(p, 0, sizeof(p));
	if (!kit_need_runner(k, c))
		return;
	for (size_t i = 0; i < N; i++) {
		char t[40];
		kit_token(k, t, sizeof(t));
		/* The trailing "-e" keeps token 1 from matching token 10. */
		snprintf(toks[i], sizeof(toks[i]), "kit-%s-e", t);
		reqs[i] = kit_req(
			k, c,
			"dirs=\"$AIRLOCK_RUN_TEMP $TMPDIR\"\n"
			"[ -n \"$KIT_CWD\" ] && dirs=\"$dirs .\"\n"
			"for d in $dirs; do : > \"$d/$KIT_TOKEN\"; done\n"
			"sleep 1\n"
			"for d in $dirs; do ls -a \"$d\"; done\n",
			"import os, time\n"
			"t = os.environ['KIT_TOKEN']\n"
			"ds = [os.environ['AIRLOCK_RUN_TEMP'], os.environ['TMPDIR']]\n"
			"if os.environ.get('KIT_CWD'): ds.append('.')\n"
			"for d in ds: open(os.path.join(d, t), 'w').close()\n"
			"time.sleep(1)\n"
			"for d in ds: print(' '.join(os.listdir(d)))\n");
		if (reqs[i] == NULL ||
		    kit_req_env(reqs[i], "KIT_TOKEN", toks[i]) < 0 ||
		    (k->workspace == AL_WORKSPACE_RW &&
		     kit_req_env(reqs[i], "KIT_CWD", "1") < 0)) {
			kit_fail(c, "out of memory");
			goto out;
		}
		p[i].k = k;
		p[i].req = reqs[i];
		p[i].c.name = c->name;
	}
	if (run_parallel(p, N) != N) {
		kit_fail(c, "kit: cannot start %d threads", N);
		goto out;
	}
	for (size_t i = 0; i < N; i++) {
		if (p[i].rc < 0) {
			kit_fail(c, "run %zu: %s", i,
				 p[i].c.reason ? p[i].c.reason : "failed");
			goto out;
		}
		const al_result *res = p[i].r.res;
		if (res->outcome != AL_OUTCOME_COMPLETED ||
		    !kit_out_has(res, AL_STDOUT, toks[i])) {
			kit_fail(c, "run %zu should complete and list its own "
				    "file; saw %s",
				 i, kit_describe(res));
			goto out;
		}
		for (size_t j = 0; j < N; j++) {
			if (j != i && kit_out_has(res, AL_STDOUT, toks[j])) {
				kit_fail(c, "run %zu sees run %zu's temporary "
					    "file",
					 i, j);
				goto out;
			}
		}
	}
	kit_pass(c);
out:
	for (size_t i = 0; i < N; i++) {
		kit_run_clear(&p[i].r);
		free(p[i].c.reason);
		al_request_free(reqs[i]);
	}
}

void kit_case_one_handle_16(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	enum { N = 16 };
	par_run p[N];
	al_request *reqs[N] = {0};
	char a[N][40], b[N][40];
	memset(p, 0, sizeof(p));
	if (!kit_need_runner(k, c))
		return;
	for (size_t i = 0; i < N; i++) {
		kit_token(k, a[i], sizeof(a[i]));
		kit_token(k, b[i], sizeof(b[i]));
		const char *argv[1] = {a[i]};
		reqs[i] = kit_req(k, c, "printf '%s:' \"$1\"\ncat\n",
				  "import sys\n"
				  "sys.stdout.write(sys.argv[1] + ':')\n"
				  "sys.stdout.write(sys.stdin.read())\n");
		if (reqs[i] == NULL || kit_req_argv(reqs[i], argv, 1) < 0 ||
		    kit_req_stdin(reqs[i], b[i], strlen(b[i])) < 0) {
			kit_fail(c, "out of memory");
			goto out;
		}
		p[i].k = k;
		p[i].req = reqs[i];
		p[i].c.name = c->name;
	}
	if (run_parallel(p, N) != N) {
		kit_fail(c, "kit: cannot start %d threads", N);
		goto out;
	}
	for (size_t i = 0; i < N; i++) {
		char want[96];
		if (p[i].rc < 0) {
			kit_fail(c, "run %zu: %s", i,
				 p[i].c.reason ? p[i].c.reason : "failed");
			goto out;
		}
		snprintf(want, sizeof(want), "%.39s:%.39s", a[i], b[i]);
		const al_result *res = p[i].r.res;
		if (res->outcome != AL_OUTCOME_COMPLETED ||
		    strcmp(kit_out(res, AL_STDOUT), want) != 0) {
			kit_fail(c, "run %zu of %d on one handle: expected "
				    "\"%s\"; saw %s",
				 i, N, want, kit_describe(res));
			goto out;
		}
	}
	kit_pass(c);
out:
	for (size_t i = 0; i < N; i++) {
		kit_run_clear(&p[i].r);
		free(p[i].c.reason);
		al_request_free(reqs[i]);
	}
}
