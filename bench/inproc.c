/* bench/inproc — times the library's in-process paths for bench/driver.py.
 *
 * One long-lived process holds an ensured `sandbox` provider handle and a
 * host (default configuration, provider forced to `sandbox`, its own state
 * directory so the audit trail is written like a real run).  The driver
 * sends one command per line on stdin and reads one reply line, so these
 * variants interleave round-robin with the spawned ones:
 *
 *   P <request json>          provider execute only   -> "<ns> <outcome>"
 *   H <request json>          whole host pipeline     -> "<ns> <outcome>"
 *   W <request json>          provider execute on a second handle ensured
 *                             with the warm-pool config given as the
 *                             optional second argument  -> "<ns> <outcome>"
 *   T <P|H|W> <threads> <ms> <request json>
 *                             throughput: each thread loops the request
 *                             until the deadline      -> "<runs> <ns> <bad>"
 *   M                         this process's VmRSS    -> "<kB>"
 *
 * Only the public API (include/airlock/) is used.  Time is measured around
 * the call alone; parsing the request is outside it.  A run whose outcome
 * is not `completed` is reported, never hidden.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <airlock/airlock.h>

struct bench {
	const al_provider_ops *ops;
	al_provider_handle *handle;
	al_provider_handle *pooled; /* NULL: no pool config, or refused */
	al_host *host;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void report_error(const char *what, const al_error *err, int rc)
{
	fprintf(stderr, "inproc: %s failed (%d): %s %s\n", what, rc,
		al_error_get_reason(err), al_error_get_message(err));
}

/* One run through the provider alone: what an embedding host pays per run
 * once the handle is ensured.  Returns the outcome, or -1. */
static void note_unexpected(const al_result *res)
{
	if (res->outcome == AL_OUTCOME_COMPLETED)
		return;
	fprintf(stderr, "inproc: a run ended %s (%s) after %llu ms\n",
		al_outcome_name(res->outcome),
		res->reason ? res->reason : "no reason",
		(unsigned long long)res->usage.wall_ms);
}

static int run_provider(const struct bench *b, al_provider_handle *h,
			const al_request *req)
{
	al_result *res = al_result_new();
	al_cancel *cancel = al_cancel_new();
	al_error *err = NULL;
	int outcome = -1;
	if (res == NULL || cancel == NULL)
		goto out;
	char run_id[40];
	al_run_id_new(run_id);
	al_exec exec = {.run_id = run_id, .request = req, .cancel = cancel};
	int rc = b->ops->execute(h, &exec, res, &err);
	if (rc < 0) {
		report_error("execute", err, rc);
		goto out;
	}
	outcome = (int)res->outcome;
	note_unexpected(res);
out:
	al_error_free(err);
	al_cancel_free(cancel);
	al_result_free(res);
	return outcome;
}

/* One run through the whole host pipeline (gates, audit, slot, execute). */
static int run_host(const struct bench *b, const al_request *req)
{
	al_host_context ctx = {.tenant = "default", .principal = "bench"};
	al_result *res = NULL;
	if (al_host_run(b->host, &ctx, req, NULL, &res) < 0 || res == NULL)
		return -1;
	int outcome = (int)res->outcome;
	note_unexpected(res);
	al_result_free(res);
	return outcome;
}

static int run_once(const struct bench *b, char mode, const al_request *req)
{
	if (mode == 'H')
		return run_host(b, req);
	if (mode == 'W')
		return b->pooled != NULL ? run_provider(b, b->pooled, req) : -1;
	return run_provider(b, b->handle, req);
}

static const char *outcome_word(int outcome)
{
	const char *name =
		outcome < 0 ? NULL : al_outcome_name((al_outcome)outcome);
	return name ? name : "error";
}

struct worker {
	const struct bench *b;
	const al_request *req;
	char mode;
	uint64_t deadline_ns;
	atomic_ulong *runs;
	atomic_ulong *bad;
};

static void *worker_main(void *arg)
{
	const struct worker *w = arg;
	while (now_ns() < w->deadline_ns) {
		int outcome = run_once(w->b, w->mode, w->req);
		atomic_fetch_add(w->runs, 1);
		if (outcome != AL_OUTCOME_COMPLETED)
			atomic_fetch_add(w->bad, 1);
	}
	return NULL;
}

#define MAX_THREADS 16

static void throughput(const struct bench *b, char mode, unsigned threads,
		       unsigned ms, const al_request *req)
{
	atomic_ulong runs = 0, bad = 0;
	pthread_t tid[MAX_THREADS];
	struct worker w = {.b = b, .req = req, .mode = mode,
			   .runs = &runs, .bad = &bad};
	uint64_t start = now_ns();
	w.deadline_ns = start + (uint64_t)ms * 1000000u;
	unsigned started = 0;
	for (; started < threads; started++)
		if (pthread_create(&tid[started], NULL, worker_main, &w) != 0)
			break;
	for (unsigned i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	uint64_t elapsed = now_ns() - start;
	if (started < threads)
		fprintf(stderr, "inproc: only %u of %u threads started\n",
			started, threads);
	printf("%lu %llu %lu\n", (unsigned long)atomic_load(&runs),
	       (unsigned long long)elapsed, (unsigned long)atomic_load(&bad));
}

static long vm_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long kb = -1;
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static al_request *parse_request(const char *json)
{
	al_error *err = NULL;
	al_request *req = NULL;
	int rc = al_request_from_json(json, strlen(json), &req, &err);
	if (rc < 0) {
		report_error("request", err, rc);
		req = NULL;
	}
	al_error_free(err);
	return req;
}

/* Handles one command line; returns 1 to go on, 0 to stop. */
static int command(const struct bench *b, char *line)
{
	line[strcspn(line, "\n")] = '\0';
	if (strcmp(line, "Q") == 0 || line[0] == '\0')
		return 0;
	if (strcmp(line, "M") == 0) {
		printf("%ld\n", vm_rss_kb());
		return 1;
	}
	if ((line[0] == 'P' || line[0] == 'H' || line[0] == 'W') &&
	    line[1] == ' ') {
		al_request *req = parse_request(line + 2);
		if (req == NULL) {
			printf("0 error\n");
			return 1;
		}
		uint64_t t0 = now_ns();
		int outcome = run_once(b, line[0], req);
		uint64_t t1 = now_ns();
		printf("%llu %s\n", (unsigned long long)(t1 - t0),
		       outcome_word(outcome));
		al_request_free(req);
		return 1;
	}
	char mode = 0;
	unsigned threads = 0, ms = 0;
	int used = 0;
	if (sscanf(line, "T %c %u %u %n", &mode, &threads, &ms, &used) == 3 &&
	    used > 0 && (mode == 'P' || mode == 'H' || mode == 'W') &&
	    threads >= 1 &&
	    threads <= MAX_THREADS && ms >= 1) {
		al_request *req = parse_request(line + used);
		if (req == NULL) {
			printf("0 0 0\n");
			return 1;
		}
		throughput(b, mode, threads, ms, req);
		al_request_free(req);
		return 1;
	}
	fprintf(stderr, "inproc: unknown command\n");
	printf("error\n");
	return 1;
}

int main(int argc, char **argv)
{
	struct bench b = {0};
	al_config *cfg = NULL;
	al_error *err = NULL;
	char *line = NULL;
	size_t cap = 0;
	int status = 1, rc;

	if ((argc != 2 && argc != 3) || argv[1][0] != '/') {
		fprintf(stderr, "usage: inproc ABSOLUTE_STATE_DIR "
				"[SANDBOX_POOL_CONFIG_JSON] < commands\n");
		return 2;
	}
	b.ops = al_provider_lookup("sandbox");
	if (b.ops == NULL) {
		fprintf(stderr, "inproc: no sandbox provider in this build\n");
		return 1;
	}
	if ((rc = b.ops->ensure(NULL, &b.handle, &err)) < 0) {
		report_error("ensure", err, rc);
		goto out;
	}
	if ((rc = b.ops->health(b.handle, &err)) < 0) {
		report_error("health", err, rc);
		goto out;
	}
	/* A pool the build or host refuses leaves W answering "error": the
	 * driver then lists the variant as skipped. */
	if (argc == 3 &&
	    (rc = b.ops->ensure(argv[2], &b.pooled, &err)) < 0) {
		report_error("ensure (pool)", err, rc);
		al_error_free(err);
		err = NULL;
		b.pooled = NULL;
	}
	if ((rc = al_config_default(&cfg, &err)) < 0) {
		report_error("config", err, rc);
		goto out;
	}
	al_host_options hopts = {.state_dir = argv[1],
				 .force_provider = "sandbox"};
	if ((rc = al_host_new(cfg, &hopts, &b.host, &err)) < 0) {
		report_error("host", err, rc);
		goto out;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready\n");
	while (getline(&line, &cap, stdin) > 0)
		if (!command(&b, line))
			break;
	status = 0;
out:
	free(line);
	al_host_free(b.host);
	al_config_free(cfg);
	al_error_free(err);
	err = NULL;
	if (b.handle != NULL && (rc = b.ops->release(b.handle, &err)) < 0) {
		report_error("release", err, rc);
		status = 1;
	}
	al_error_free(err);
	err = NULL;
	if (b.pooled != NULL && (rc = b.ops->release(b.pooled, &err)) < 0) {
		report_error("release (pool)", err, rc);
		status = 1;
	}
	al_error_free(err);
	return status;
}
