/* Warm pool members of an inbox class (docs/sandbox.md, "Warm pools";
 * docs/durability.md, the inbox): the "inbox" pool key and the class
 * check, and — through real handles, the pool's counters saying a member
 * was taken — that a pooled python run with an inbox sees the events
 * there at go and one delivered while it runs, that its acknowledgements
 * are in the run's acks when execute returns (and only those: a hostile
 * program's links, FIFOs, directories and odd names are not), that
 * /inbox is read-only, that cold and pooled runs see the same /inbox and
 * /inbox-acks, and that nothing is left behind.  Cases needing the
 * sandbox or python skip, saying why, only when the probed facts lack
 * them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <airlock/airlock.h>

#include "core/util.h"
#include "child/rundir.h"
#include "sandbox/context.h"
#include "sandbox/launch.h"
#include "sandbox/pool.h"
#include "sandbox/warm.h"

static const al_provider_ops *ops;
static al_facts *facts;

static int setup(void **state)
{
	(void)state;
	ops = al_provider_lookup("sandbox");
	/* airlock-init's memfd lives as long as the process, made at the
	 * first ensure: made now, it is in every count of descriptors below */
	al_sb_launch_prepare(geteuid() == 0);
	return ops == NULL || ops->probe(NULL, &facts, NULL) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	al_facts_free(facts);
	return 0;
}

static void need_python(void)
{
	if (!facts->available) {
		print_message("skip: sandbox unavailable: %s\n",
			      facts->unavailable_reason);
		skip();
	}
	if (al_facts_find_language(facts, "python") == NULL) {
		print_message("skip: the sandbox facts list no python\n");
		skip();
	}
}

/* ---- config and class ---------------------------------------------- */

static void test_config_and_class(void **state)
{
	(void)state;
	al_sb_config cfg;
	al_error *err = NULL;
	assert_int_equal(al_sb_config_parse("{\"pool\": {\"python\": {\"size\": "
					    "1, \"inbox\": true}, \"sh\": "
					    "{\"size\": 1}}}",
					    &cfg, &err),
			 0);
	assert_int_equal(cfg.n_pool, 2);
	assert_true(cfg.pool[0].inbox);
	assert_false(cfg.pool[1].inbox); /* the default */
	al_sb_config_clear(&cfg);
	assert_true(al_sb_config_parse("{\"pool\": {\"python\": {\"size\": 1, "
				       "\"inbox\": 1}}}",
				       &cfg, &err) < 0);
	assert_int_equal(al_error_get_code(err), AL_ERR_INVALID_CONFIG);
	assert_string_equal(al_error_get_reason(err), "pool.python.inbox");
	al_error_free(err);
	err = NULL;

	al_request *req = al_request_new();
	assert_non_null(req);
	req->language = strdup("python");
	al_limits_apply_defaults(&req->limits);
	al_exec exec = {.run_id = "r", .request = req};
	al_sb_warm_class c = {.language = "python",
			      .tc_path = "/usr/bin/python3"};
	/* a plain member serves no inbox, an inbox member only inboxes */
	assert_null(al_sb_warm_mismatch(&c, &exec, c.tc_path));
	exec.inbox_dir = "/x/inbox";
	exec.inbox_acks_dir = "/x/acks";
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path), "inbox");
	c.inbox = true;
	assert_null(al_sb_warm_mismatch(&c, &exec, c.tc_path));
	exec.inbox_acks_dir = NULL; /* half an inbox shows none */
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path), "inbox");
	c.inbox = false;
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path), "inbox");
	exec.inbox_dir = NULL;
	assert_null(al_sb_warm_mismatch(&c, &exec, c.tc_path));
	c.inbox = true;
	assert_string_equal(al_sb_warm_mismatch(&c, &exec, c.tc_path), "inbox");
	al_request_free(req);
}

/* ---- a durable run's directories, as the daemon makes them ---------- */

typedef struct durable {
	char root[64];
	char inbox[96];
	char acks[96];
} durable;

static void durable_make(durable *d)
{
	snprintf(d->root, sizeof(d->root), "/tmp/al-inbox-test-XXXXXX");
	assert_non_null(mkdtemp(d->root));
	snprintf(d->inbox, sizeof(d->inbox), "%s/inbox", d->root);
	snprintf(d->acks, sizeof(d->acks), "%s/acks", d->root);
	assert_int_equal(mkdir(d->inbox, 0755), 0);
	assert_int_equal(chmod(d->inbox, 0755), 0);
	assert_int_equal(mkdir(d->acks, 0700), 0);
}

static void durable_remove(durable *d)
{
	assert_int_equal(al_remove_tree_at(AT_FDCWD, d->root), 0);
}

/* One event, written whole by temp + rename, 0444, as the daemon does. */
static void deliver(const durable *d, unsigned seq, const char *id,
		    const char *event)
{
	char name[96], tmp[256], path[256];
	snprintf(name, sizeof(name), "%06u-%s.json", seq, id);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", d->inbox, name);
	snprintf(path, sizeof(path), "%s/%s", d->inbox, name);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	assert_true(fd >= 0);
	char *text = al_strdup_printf("{\"id\": \"%s\", \"event\": %s}", id,
				      event);
	assert_non_null(text);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	free(text);
	assert_int_equal(fchmod(fd, 0444), 0);
	close(fd);
	assert_int_equal(rename(tmp, path), 0);
}

/* The names in dir, sorted, joined by ","; the caller frees it. */
static char *listing(const char *dir)
{
	struct dirent **names = NULL;
	int n = scandir(dir, &names, NULL, alphasort);
	assert_true(n >= 0);
	char *out = strdup("");
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") != 0 &&
		    strcmp(names[i]->d_name, "..") != 0) {
			char *next = al_strdup_printf("%s%s%s", out,
						      out[0] ? "," : "",
						      names[i]->d_name);
			free(out);
			out = next;
		}
		free(names[i]);
	}
	free(names);
	assert_non_null(out);
	return out;
}

static al_request *python_request(const char *code)
{
	json_t *j = json_pack("{s:s, s:s, s:{s:i}}", "language", "python",
			      "code", code, "limits", "wall_ms", 20000);
	assert_non_null(j);
	char *text = json_dumps(j, 0);
	json_decref(j);
	al_request *req = NULL;
	assert_int_equal(al_request_from_json(text, strlen(text), &req, NULL),
			 0);
	free(text);
	return req;
}

static al_result *run_with_inbox(al_provider_handle *h, al_request *req,
				 const durable *d, const char *id)
{
	al_cancel *cancel = al_cancel_new();
	al_exec exec = {.run_id = id,
			.request = req,
			.cancel = cancel,
			.inbox_dir = d->inbox,
			.inbox_acks_dir = d->acks};
	al_result *res = al_result_new();
	assert_non_null(res);
	assert_int_equal(ops->execute(h, &exec, res, NULL), 0);
	al_cancel_free(cancel);
	return res;
}

static const char *text_of(const al_result *res, int s)
{
	return res->output[s].data ? (const char *)res->output[s].data : "";
}

static void wait_idle(al_provider_handle *h)
{
	for (int i = 0; i < 500; i++) {
		al_sb_pool_stats st;
		al_sb_provider_pool_stats(h, &st);
		if (st.idle > 0)
			return;
		usleep(10000);
	}
	fail_msg("no warm member became ready within 5 s");
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	int n = 0;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

static bool dir_has_prefix(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return false;
	bool found = false;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			found = true;
	closedir(d);
	return found;
}

static al_provider_handle *inbox_pool(const char *base)
{
	char cfg[256];
	snprintf(cfg, sizeof(cfg),
		 "{\"run_dir\": \"%s\", \"pool\": {\"python\": {\"size\": 1, "
		 "\"inbox\": true}}}",
		 base);
	al_provider_handle *h = NULL;
	assert_int_equal(ops->ensure(cfg, &h, NULL), 0);
	wait_idle(h);
	return h;
}

static void release_clean(al_provider_handle *h, char *base)
{
	assert_int_equal(ops->release(h, NULL), 0);
	assert_false(dir_has_prefix(base, "warm-"));
	assert_true(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
	assert_int_equal(rmdir(base), 0);
}

/* ---- events at go, one while running, two acks ---------------------- */

/* Lists /inbox, acknowledges a1 (which the test waits for in the run's
 * acks before it delivers c3), waits for c3, acknowledges it. */
static const char live_py[] =
	"import os, sys, time\n"
	"print('env', os.environ.get('AIRLOCK_INBOX'), "
	"os.environ.get('AIRLOCK_INBOX_ACKS'))\n"
	"print('at go', sorted(os.listdir('/inbox')))\n"
	"try:\n"
	"    open('/inbox/x', 'w')\n"
	"    print('inbox writable')\n"
	"except OSError as e:\n"
	"    print('inbox ro', e.errno)\n"
	"open('/inbox-acks/a1', 'w').close()\n"
	"name = '/inbox/000003-c3.json'\n"
	"for _ in range(1000):\n"
	"    if os.path.exists(name):\n"
	"        break\n"
	"    time.sleep(0.01)\n"
	"print('later', open(name).read())\n"
	"open('/inbox-acks/c3', 'w').close()\n";

typedef struct live_ctx {
	const durable *d;
	bool saw_ack; /* a1 was mirrored while the program ran */
} live_ctx;

static void *deliver_later(void *arg)
{
	live_ctx *c = arg;
	char path[160];
	snprintf(path, sizeof(path), "%s/a1", c->d->acks);
	for (int i = 0; i < 1000 && !c->saw_ack; i++) {
		if (access(path, F_OK) == 0)
			c->saw_ack = true;
		else
			usleep(10000);
	}
	deliver(c->d, 3, "c3", "{\"n\": 3}");
	return NULL;
}

static void test_pooled_inbox_live(void **state)
{
	(void)state;
	need_python();
	int fds = count_fds();
	char base[] = "/tmp/al-pool-inbox-XXXXXX";
	assert_non_null(mkdtemp(base));
	al_provider_handle *h = inbox_pool(base);
	durable d;
	durable_make(&d);
	deliver(&d, 1, "a1", "{\"n\": 1}");
	deliver(&d, 2, "b2", "\"two\"");

	al_request *req = python_request(live_py);
	live_ctx lc = {.d = &d};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, deliver_later, &lc), 0);
	char id[40];
	al_run_id_new(id);
	al_result *res = run_with_inbox(h, req, &d, id);
	pthread_join(t, NULL);
	print_message("stdout: %s\nstderr: %s\n", text_of(res, 0),
		      text_of(res, 1));
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	assert_int_equal(res->exit_code, 0);
	const char *out = text_of(res, 0);
	assert_non_null(strstr(out, "env /inbox /inbox-acks\n"));
	assert_non_null(strstr(
		out, "at go ['000001-a1.json', '000002-b2.json']\n"));
	assert_non_null(strstr(out, "inbox ro 30\n")); /* EROFS */
	assert_non_null(strstr(out, "later {\"id\": \"c3\", \"event\": "
				    "{\"n\": 3}}\n"));
	assert_true(lc.saw_ack);
	/* both acknowledgements are in the run's acks when execute returns */
	char *acks = listing(d.acks);
	assert_string_equal(acks, "a1,c3");
	free(acks);
	al_sb_pool_stats st;
	al_sb_provider_pool_stats(h, &st);
	assert_int_equal(st.taken, 1);
	assert_int_equal(st.cold, 0);
	al_result_free(res);

	/* a run without an inbox is not this class's */
	al_cancel *cancel = al_cancel_new();
	al_exec plain = {.run_id = id, .request = req, .cancel = cancel};
	res = al_result_new();
	assert_int_equal(ops->execute(h, &plain, res, NULL), 0);
	al_cancel_free(cancel);
	al_result_free(res);
	al_sb_provider_pool_stats(h, &st);
	assert_int_equal(st.taken, 1);
	assert_int_equal(st.cold, 1);
	al_request_free(req);

	durable_remove(&d);
	release_clean(h, base);
	assert_int_equal(count_fds(), fds);
}

/* ---- a hostile program ---------------------------------------------- */

static const char hostile_py[] =
	"import os\n"
	"os.chdir('/inbox-acks')\n"
	"os.symlink('/etc/passwd', 'zz')\n"
	"os.symlink('/etc/passwd', 'b2')\n" /* a delivered id: not followed */
	"os.mkfifo('ff')\n"
	"os.mkdir('dd')\n"
	"open('dd/a1', 'w').close()\n"
	"open('bad name!', 'w').close()\n"
	"open('x' * 250, 'w').close()\n"
	"open('.a1', 'w').close()\n"
	"open('a1', 'w').close()\n"
	/* /inbox-acks holds one inode per event the inbox can hold */
	"try:\n"
	"    for i in range(3000):\n"
	"        open('n%d' % i, 'w').close()\n"
	"except OSError as e:\n"
	"    print('full', e.errno)\n"
	"print('done', len(os.listdir('.')))\n";

static void test_pooled_inbox_hostile(void **state)
{
	(void)state;
	need_python();
	char base[] = "/tmp/al-pool-inbox-XXXXXX";
	assert_non_null(mkdtemp(base));
	al_provider_handle *h = inbox_pool(base);
	durable d;
	durable_make(&d);
	deliver(&d, 1, "a1", "1");
	deliver(&d, 2, "b2", "2");
	deliver(&d, 3, "c3", "3");
	al_request *req = python_request(hostile_py);
	char id[40];
	al_run_id_new(id);
	al_result *res = run_with_inbox(h, req, &d, id);
	print_message("stdout: %s\nstderr: %s\n", text_of(res, 0),
		      text_of(res, 1));
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	assert_int_equal(res->exit_code, 0);
	assert_non_null(strstr(text_of(res, 0), "full 28\n")); /* ENOSPC */
	/* 1024 inodes besides the root: dd/a1 is one of them */
	assert_non_null(strstr(text_of(res, 0), "done 1023\n"));
	/* only the delivered ids, as empty files; nothing followed */
	char *acks = listing(d.acks);
	assert_string_equal(acks, "a1,b2");
	free(acks);
	const char *const marks[] = {"a1", "b2"};
	for (int i = 0; i < 2; i++) {
		char path[160];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s", d.acks, marks[i]);
		assert_int_equal(lstat(path, &st), 0);
		assert_true(S_ISREG(st.st_mode));
		assert_int_equal(st.st_size, 0);
	}
	al_sb_pool_stats st;
	al_sb_provider_pool_stats(h, &st);
	assert_int_equal(st.taken, 1);
	assert_int_equal(st.cold, 0);
	al_result_free(res);
	al_request_free(req);
	durable_remove(&d);
	release_clean(h, base);
}

/* ---- cold and pooled see the same inbox ----------------------------- */

static const char view_py[] =
	"import os\n"
	"def show(p):\n"
	"    s = os.lstat(p)\n"
	"    print(p, oct(s.st_mode), s.st_uid, s.st_gid, s.st_size, "
	"s.st_nlink)\n"
	"show('/inbox')\n"
	"show('/inbox-acks')\n"
	"for n in sorted(os.listdir('/inbox')):\n"
	"    show('/inbox/' + n)\n"
	"print(sorted(os.listdir('/inbox-acks')))\n"
	"for p in ('/inbox', '/inbox-acks'):\n"
	"    for line in open('/proc/self/mountinfo'):\n"
	"        f = line.split()\n"
	"        if f[4] == p:\n"
	"            print(p, f[5], f[line.split().index('-') + 1:][0])\n"
	"for p in ('/inbox/new', '/inbox-acks/a1'):\n"
	"    try:\n"
	"        open(p, 'w').close()\n"
	"        print(p, 'written')\n"
	"    except OSError as e:\n"
	"        print(p, 'refused', e.errno)\n"
	"show('/inbox-acks/a1')\n"
	"print(os.getuid(), os.getgid(), os.environ['AIRLOCK_INBOX'], "
	"os.environ['AIRLOCK_INBOX_ACKS'])\n";

static void test_cold_and_pooled_alike(void **state)
{
	(void)state;
	need_python();
	char base[] = "/tmp/al-pool-inbox-XXXXXX";
	assert_non_null(mkdtemp(base));
	al_provider_handle *warm = inbox_pool(base);
	al_provider_handle *cold = NULL;
	assert_int_equal(ops->ensure(NULL, &cold, NULL), 0);
	al_request *req = python_request(view_py);
	durable dc, dw;
	durable_make(&dc);
	durable_make(&dw);
	deliver(&dc, 1, "a1", "{\"k\": [1, 2]}");
	deliver(&dw, 1, "a1", "{\"k\": [1, 2]}");
	deliver(&dc, 2, "b2", "null");
	deliver(&dw, 2, "b2", "null");
	char id[40];
	al_run_id_new(id);
	al_result *a = run_with_inbox(cold, req, &dc, id);
	al_result *b = run_with_inbox(warm, req, &dw, id);
	print_message("cold:\n%s%s\npooled:\n%s%s\n", text_of(a, 0),
		      text_of(a, 1), text_of(b, 0), text_of(b, 1));
	assert_int_equal(a->outcome, AL_OUTCOME_COMPLETED);
	assert_int_equal(b->outcome, AL_OUTCOME_COMPLETED);
	assert_string_equal(text_of(a, 0), text_of(b, 0));
	assert_string_equal(text_of(a, 1), text_of(b, 1));
	assert_non_null(strstr(text_of(a, 0), "/inbox/new refused 30\n"));
	char *ca = listing(dc.acks), *cb = listing(dw.acks);
	assert_string_equal(ca, "a1");
	assert_string_equal(cb, "a1");
	free(ca);
	free(cb);
	al_sb_pool_stats st;
	al_sb_provider_pool_stats(warm, &st);
	assert_int_equal(st.taken, 1);
	assert_int_equal(st.cold, 0);
	al_result_free(a);
	al_result_free(b);
	al_request_free(req);
	durable_remove(&dc);
	durable_remove(&dw);
	assert_int_equal(ops->release(cold, NULL), 0);
	release_clean(warm, base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_and_class),
		cmocka_unit_test(test_pooled_inbox_live),
		cmocka_unit_test(test_pooled_inbox_hostile),
		cmocka_unit_test(test_cold_and_pooled_alike),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
