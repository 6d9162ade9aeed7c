/* Cases for what a running program does with its host (docs/toolbelt.md),
 * run when the provider's facts claim them: the toolbelt (the kit serves
 * the socket as a host would, and the provider must show airlock-tool and
 * its variables to the program), host operations through it, and the
 * inbox (events in, acknowledgements out). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include <airlock/json.h>

#include "core/util.h"
#include "kit/kit_cases.h"
#include "supervisor/toolbelt.h"

/* A run directory of the kit's own, as a host's: RUN/tool beneath it,
 * and the operations the run may call. */
typedef struct tb_run {
	char dir[128];
	int dirfd;
	char *bin;
	char token[65];
	al_toolbelt *tb;
	char *tool_dir;
} tb_run;

static bool tb_start(kit_ctx *k, kit_case *c, const al_request *req,
		     const char *ops_json, tb_run *t)
{
	memset(t, 0, sizeof(*t));
	t->dirfd = -1;
	/* A remote run's toolbelt is the other host's, which hands back
	 * its record in the result (docs/toolbelt.md, "Remote"). */
	if (k->facts->safety_class == AL_SAFETY_REMOTE)
		return true;
	snprintf(t->dir, sizeof(t->dir), "%s/tb-%s", k->hostdir, c->name);
	if ((t->bin = al_toolbelt_bin_dir()) == NULL) {
		kit_fail(c, "the provider claims the toolbelt but airlock-tool "
			    "is not installed beside this binary");
		return false;
	}
	char *canon = al_request_to_json(req);
	if (canon == NULL || mkdir(t->dir, 0700) < 0 ||
	    (t->dirfd = open(t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    al_toolbelt_persist_operations(t->dirfd, ops_json) < 0 ||
	    (t->tool_dir = al_toolbelt_dir(t->dir)) == NULL) {
		free(canon);
		kit_fail(c, "kit: cannot prepare a run directory: %s",
			 strerror(errno));
		return false;
	}
	al_toolbelt_cfg cfg = {.run_dirfd = t->dirfd, .run_id = "kit",
			       .request_json = canon,
			       .deadline_ms = al_now_ms() + 60000,
			       .outlog_fd = -1,
			       .webhook = al_tool_webhook_post};
	int rc = al_toolbelt_start(&cfg, t->token, &t->tb);
	free(canon);
	if (rc < 0) {
		kit_fail(c, "kit: cannot serve the toolbelt: %s", strerror(-rc));
		return false;
	}
	return true;
}

static void tb_clear(tb_run *t)
{
	(void)al_toolbelt_finish(t->tb, NULL);
	t->tb = NULL;
	if (t->dirfd >= 0)
		close(t->dirfd);
	free(t->bin);
	free(t->tool_dir);
	explicit_bzero(t->token, sizeof(t->token));
}

static kit_exec_opts tb_opts(const tb_run *t)
{
	return (kit_exec_opts){.tool_dir = t->tool_dir,
			       .tool_bin_dir = t->bin,
			       .tool_token = t->token};
}

static bool want_toolbelt(kit_ctx *k, kit_case *c)
{
	if (!kit_need_runner(k, c))
		return false;
	if (!k->facts->toolbelt) {
		kit_skip(c, "facts: toolbelt not offered");
		return false;
	}
	return true;
}

/* Context, an event and a declared failure with exit 0. */
void kit_case_toolbelt(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	tb_run t = {.dirfd = -1};
	al_request *req = NULL;
	json_t *ev = NULL;
	if (!want_toolbelt(k, c))
		return;
	req = kit_req(k, c,
		      "airlock-tool context >/dev/null || exit 3\n"
		      "airlock-tool emit --type kit '{\"n\": 1}' >/dev/null || exit 4\n"
		      "airlock-tool outcome failed --reason kit_declared "
		      ">/dev/null || exit 5\n",
		      "import subprocess, sys\n"
		      "for i, a in enumerate([['context'],\n"
		      "    ['emit', '--type', 'kit', '{\"n\": 1}'],\n"
		      "    ['outcome', 'failed', '--reason', 'kit_declared']]):\n"
		      "    if subprocess.run(['airlock-tool'] + a, "
		      "stdout=subprocess.DEVNULL).returncode:\n"
		      "        sys.exit(3 + i)\n");
	if (req == NULL)
		goto out;
	req->grant.toolbelt = true;
	if (!tb_start(k, c, req, NULL, &t))
		goto out;
	kit_exec_opts o = tb_opts(&t);
	if (kit_exec(k, c, req, &o, &r) < 0)
		goto out;
	/* The host observed the end: the declaration applies now. */
	int rc = al_toolbelt_finish(t.tb, r.res);
	t.tb = NULL;
	if (rc < 0 || !r.res->has_exit_code || r.res->exit_code != 0) {
		kit_fail(c, "the program's toolbelt calls failed: %s",
			 kit_describe(r.res));
		goto out;
	}
	ev = r.res->events_json ? json_loads(r.res->events_json, 0, NULL) : NULL;
	json_t *e0 = json_array_get(ev, 0);
	if (json_array_size(ev) != 1 ||
	    json_integer_value(json_object_get(json_object_get(e0, "data"),
					       "n")) != 1) {
		kit_fail(c, "the emitted event did not reach the host");
		goto out;
	}
	if (r.res->outcome != AL_OUTCOME_FAILED || r.res->reason == NULL ||
	    strcmp(r.res->reason, "declared") != 0) {
		kit_fail(c, "a declared failure with exit 0 gave %s",
			 kit_describe(r.res));
		goto out;
	}
	kit_pass(c);
out:
	json_decref(ev);
	tb_clear(&t);
	kit_run_clear(&r);
	al_request_free(req);
}

/* ---- host operations: a loopback webhook the kit answers ------------- */

typedef struct hook {
	int fd;
	int port;
	bool got;
} hook;

static void *hook_main(void *arg)
{
	hook *h = arg;
	struct pollfd p = {h->fd, POLLIN, 0};
	if (poll(&p, 1, 30000) <= 0)
		return NULL;
	int s = accept(h->fd, NULL, NULL);
	if (s < 0)
		return NULL;
	char buf[8192] = "";
	size_t got = 0;
	/* Reads the head and the little body the call sends. */
	for (int i = 0; i < 100 && got < sizeof(buf) - 1; i++) {
		struct pollfd q = {s, POLLIN, 0};
		if (poll(&q, 1, 5000) <= 0)
			break;
		ssize_t n = read(s, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
		char *body = strstr(buf, "\r\n\r\n");
		char *cl = strstr(buf, "Content-Length: ");
		if (body != NULL && cl != NULL &&
		    got >= (size_t)(body + 4 - buf) + strtoul(cl + 16, NULL, 10))
			break;
	}
	h->got = strstr(buf, "\"operation\":\"kit_echo\"") != NULL;
	static const char answer[] =
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
		"Content-Length: 13\r\nConnection: close\r\n\r\n{\"kit\": true}";
	if (write(s, answer, sizeof(answer) - 1) < 0) {
		/* the case sees the call fail */
	}
	close(s);
	return NULL;
}

static int hook_open(hook *h)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	h->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->fd < 0 || bind(h->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(h->fd, 1) < 0 ||
	    getsockname(h->fd, (struct sockaddr *)&sa, &len) < 0)
		return -errno;
	h->port = ntohs(sa.sin_port);
	return 0;
}

/* A granted operation answers; one the run was not granted is denied. */
void kit_case_host_api(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	tb_run t = {.dirfd = -1};
	al_request *req = NULL;
	hook h = {.fd = -1};
	pthread_t tid;
	bool thread = false;
	char *ops = NULL;
	if (!want_toolbelt(k, c))
		return;
	if (k->facts->safety_class == AL_SAFETY_REMOTE) {
		kit_skip(c, "facts: a remote run calls the other host's "
			    "operations, not the kit's");
		return;
	}
	req = kit_req(k, c,
		      "out=$(airlock-tool call kit_echo '{\"x\": 1}') || exit 3\n"
		      "[ \"$out\" = '{\"kit\":true}' ] || exit 4\n"
		      "airlock-tool call kit_other >/dev/null; [ $? -eq 1 ] || exit 5\n",
		      "import subprocess, sys\n"
		      "p = subprocess.run(['airlock-tool', 'call', 'kit_echo', "
		      "'{\"x\": 1}'], capture_output=True, text=True)\n"
		      "if p.returncode: sys.exit(3)\n"
		      "if p.stdout.strip() != '{\"kit\":true}': sys.exit(4)\n"
		      "q = subprocess.run(['airlock-tool', 'call', 'kit_other'], "
		      "stdout=subprocess.DEVNULL)\n"
		      "sys.exit(0 if q.returncode == 1 else 5)\n");
	if (req == NULL)
		goto out;
	req->grant.toolbelt = true;
	req->grant.operations = calloc(2, sizeof(char *));
	if (req->grant.operations == NULL ||
	    (req->grant.operations[0] = strdup("kit_echo")) == NULL) {
		kit_fail(c, "kit: out of memory");
		goto out;
	}
	req->grant.n_operations = 1;
	if (hook_open(&h) < 0 || pthread_create(&tid, NULL, hook_main, &h) != 0) {
		kit_fail(c, "kit: cannot open its loopback webhook");
		goto out;
	}
	thread = true;
	ops = al_strdup_printf(
		"{\"kit_echo\": {\"kind\": \"webhook\", \"url\": "
		"\"http://127.0.0.1:%d/\", \"timeout_ms\": 10000, "
		"\"max_response_bytes\": 1024}, \"kit_other\": {\"kind\": "
		"\"webhook\", \"url\": \"http://127.0.0.1:%d/\"}}",
		h.port, h.port);
	if (ops == NULL || !tb_start(k, c, req, ops, &t))
		goto out;
	kit_exec_opts o = tb_opts(&t);
	if (kit_exec(k, c, req, &o, &r) < 0)
		goto out;
	(void)al_toolbelt_finish(t.tb, r.res);
	t.tb = NULL;
	if (r.res->outcome != AL_OUTCOME_COMPLETED) {
		kit_fail(c, "the program's calls failed (exit 3: the granted "
			    "call, 4: its answer, 5: the denied one): %s",
			 kit_describe(r.res));
		goto out;
	}
	if (r.res->host_calls_json == NULL ||
	    strstr(r.res->host_calls_json, "\"denied\"") == NULL) {
		kit_fail(c, "the calls were not recorded");
		goto out;
	}
	kit_pass(c);
out:
	if (thread) {
		if (!h.got && h.fd >= 0)
			shutdown(h.fd, SHUT_RDWR);
		pthread_join(tid, NULL);
	}
	if (h.fd >= 0)
		close(h.fd);
	free(ops);
	tb_clear(&t);
	kit_run_clear(&r);
	al_request_free(req);
}

/* ---- the inbox ------------------------------------------------------- */

void kit_case_inbox(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	al_request *req = NULL;
	char inbox[128], acks[128], path[192];
	if (!kit_need_runner(k, c))
		return;
	if (!k->facts->inject) {
		kit_skip(c, "facts: inject not offered");
		return;
	}
	snprintf(inbox, sizeof(inbox), "%s/inbox", k->hostdir);
	snprintf(acks, sizeof(acks), "%s/acks", k->hostdir);
	snprintf(path, sizeof(path), "%s/000001-kit-1.json", inbox);
	FILE *f = NULL;
	if (mkdir(inbox, 0755) < 0 || mkdir(acks, 0700) < 0 ||
	    (f = fopen(path, "w")) == NULL) {
		kit_fail(c, "kit: cannot make an inbox: %s", strerror(errno));
		goto out;
	}
	fputs("{\"id\": \"kit-1\", \"event\": {\"k\": 1}}", f);
	fclose(f);
	chmod(inbox, 0755);
	chmod(path, 0444);
	req = kit_req(k, c,
		      "grep -q '\"k\": 1' \"$AIRLOCK_INBOX/000001-kit-1.json\" "
		      "|| exit 3\ntouch \"$AIRLOCK_INBOX_ACKS/kit-1\" || exit 4\n",
		      "import os, sys\n"
		      "p = os.path.join(os.environ['AIRLOCK_INBOX'], "
		      "'000001-kit-1.json')\n"
		      "if '\"k\": 1' not in open(p).read(): sys.exit(3)\n"
		      "open(os.path.join(os.environ['AIRLOCK_INBOX_ACKS'], "
		      "'kit-1'), 'w').close()\n");
	if (req == NULL)
		goto out;
	kit_exec_opts o = {.inbox_dir = inbox, .inbox_acks_dir = acks};
	if (kit_exec(k, c, req, &o, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	snprintf(path, sizeof(path), "%s/kit-1", acks);
	if (access(path, F_OK) != 0) {
		kit_fail(c, "the program's acknowledgement did not reach the "
			    "host's acks directory");
		goto out;
	}
	kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}
