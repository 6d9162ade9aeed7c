/* The providers' side of the bundle (docs/workspaces.md), driven through
 * their operations tables: they materialise the bundle they are given —
 * not the request's files — and refuse one whose bytes differ from its
 * manifest (`unavailable` / `bundle_mismatch`, nothing run), whether they
 * write it on the host (local; the sandbox's RUN/workspace) or the
 * sandbox's init writes it into a bounded tmpfs; declared outputs and the
 * log land in the artifact directory given; a request the workspace grant
 * cannot hold is refused by the provider itself.  Sandbox cases skip,
 * saying why, only when the probed facts lack what they need. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <airlock/airlock.h>

#include "core/util.h"
#include "child/rundir.h"

typedef struct prov {
	const al_provider_ops *ops;
	al_provider_handle *handle;
	al_facts *facts;
} prov;

static prov local, sandbox;

static int setup(void **state)
{
	(void)state;
	local.ops = al_provider_lookup("local");
	sandbox.ops = al_provider_lookup("sandbox");
	if (local.ops->ensure(NULL, &local.handle, NULL) < 0 ||
	    sandbox.ops->probe(NULL, &sandbox.facts, NULL) < 0)
		return -1;
	if (sandbox.facts->available &&
	    sandbox.ops->ensure(NULL, &sandbox.handle, NULL) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	int rc = local.ops->release(local.handle, NULL);
	if (sandbox.handle != NULL && sandbox.ops->release(sandbox.handle, NULL) < 0)
		rc = -1;
	al_facts_free(sandbox.facts);
	return rc;
}

static bool sandbox_has(unsigned limit)
{
	if (!sandbox.facts->available) {
		print_message("skip: sandbox unavailable: %s\n",
			      sandbox.facts->unavailable_reason);
		return false;
	}
	if (limit != 0 && !(sandbox.facts->limits & limit)) {
		print_message("skip: the sandbox facts do not list limit %s\n",
			      al_limit_name(limit));
		return false;
	}
	return true;
}

static al_request *make_request(bool for_local, const char *code,
				const char *content)
{
	al_request *req = al_request_new();
	assert_non_null(req);
	req->language = strdup("sh");
	al_bytes_clear(&req->code);
	al_bytes_set(&req->code, code, strlen(code));
	al_limits_apply_defaults(&req->limits);
	req->grant.network = for_local ? AL_NETWORK_HOST : AL_NETWORK_NONE;
	req->grant.workspace = AL_WORKSPACE_RW;
	req->files = calloc(1, sizeof(*req->files));
	req->n_files = 1;
	req->files[0].path = strdup("data/in.txt");
	req->files[0].mode = 0640;
	al_bytes_set(&req->files[0].content, content, strlen(content));
	return req;
}

static void bounded(al_request *req, uint64_t bytes)
{
	req->limits.set |= AL_LIMIT_WORKSPACE_BYTES;
	req->limits.workspace_bytes = bytes;
}

static al_result *execute(prov *p, const al_request *req,
			  const al_bundle *b, const al_manifest *m,
			  const char *artifact_dir)
{
	char id[40];
	al_run_id_new(id);
	al_cancel *cancel = al_cancel_new();
	al_exec exec = {.run_id = id, .request = req, .cancel = cancel,
			.bundle = b, .manifest = m,
			.artifact_dir = artifact_dir};
	al_result *res = al_result_new();
	assert_int_equal(p->ops->execute(p->handle, &exec, res, NULL), 0);
	assert_int_equal(al_result_check_shape(res), 0);
	al_cancel_free(cancel);
	return res;
}

/* The manifest of other bytes of the same shape: it passes the shape
 * check and fails on the bytes written. */
static void mismatched(al_request *req, bool for_local, al_bundle **b,
		       al_manifest **m)
{
	al_request *other = make_request(for_local, "echo RAN", "EVIL");
	al_bundle *ob = NULL;
	assert_int_equal(al_bundle_new(req, b, NULL), 0);
	assert_int_equal(al_bundle_new(other, &ob, NULL), 0);
	assert_int_equal(al_manifest_new(ob, m), 0);
	assert_int_equal(al_manifest_check(*m, *b, NULL), 0);
	al_bundle_free(ob);
	al_request_free(other);
}

static void expect_mismatch(prov *p, al_request *req, bool for_local)
{
	al_bundle *b = NULL;
	al_manifest *m = NULL;
	mismatched(req, for_local, &b, &m);
	al_result *res = execute(p, req, b, m, NULL);
	assert_int_equal(res->outcome, AL_OUTCOME_UNAVAILABLE);
	assert_string_equal(res->reason, "bundle_mismatch");
	assert_int_equal(res->output[AL_STDOUT].len, 0);
	assert_false(res->has_exit_code);
	al_result_free(res);
	al_manifest_free(m);
	al_bundle_free(b);
}

static void test_local_refuses_a_mismatched_bundle(void **state)
{
	(void)state;
	al_request *req = make_request(true, "echo RAN", "data");
	expect_mismatch(&local, req, true);
	al_request_free(req);
}

static void test_sandbox_refuses_a_mismatched_bundle(void **state)
{
	(void)state;
	if (!sandbox_has(0))
		skip();
	al_request *req = make_request(false, "echo RAN", "data");
	expect_mismatch(&sandbox, req, false);
	al_request_free(req);
}

/* The init writes the inputs into the tmpfs; the parent reads them back
 * through the descriptor it is handed before the program exists. */
static void test_sandbox_bounded_refuses_a_mismatched_bundle(void **state)
{
	(void)state;
	if (!sandbox_has(AL_LIMIT_WORKSPACE_BYTES))
		skip();
	al_request *req = make_request(false, "echo RAN", "data");
	bounded(req, 1 << 20);
	expect_mismatch(&sandbox, req, false);
	al_request_free(req);
}

static char *make_tmpdir(void)
{
	char tmpl[] = "/tmp/al-pbundle-XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	return strdup(tmpl);
}

static char *read_artifact(const char *dir, const char *id, size_t *len)
{
	char *p = al_strdup_printf("%s/%s", dir, id);
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	char *buf = calloc(1, (size_t)st.st_size + 1);
	int fd = open(p, O_RDONLY);
	assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	free(p);
	*len = (size_t)st.st_size;
	return buf;
}

/* The bundle is what runs: its file, not the request's; the outputs and
 * the log go to the artifact directory. */
static void run_bundle_not_request(prov *p, bool for_local, bool bound)
{
	static const char code[] =
		"cat data/in.txt; stat -c %a data/in.txt; "
		"mkdir out; cp data/in.txt out/copy.txt; ln -s /etc/passwd "
		"out/link.txt";
	al_request *req = make_request(for_local, code, "from-request\n");
	al_request *shown = make_request(for_local, code, "from-bundle!\n");
	if (bound) {
		bounded(req, 1 << 20);
		bounded(shown, 1 << 20);
	}
	req->outputs = calloc(2, sizeof(char *));
	req->outputs[0] = strdup("out/*.txt");
	req->n_outputs = 1;
	al_bundle *b = NULL;
	al_manifest *m = NULL;
	assert_int_equal(al_bundle_new(shown, &b, NULL), 0);
	assert_int_equal(al_manifest_new(b, &m), 0);
	char *dir = make_tmpdir();
	al_result *res = execute(p, req, b, m, dir);
	assert_int_equal(res->outcome, AL_OUTCOME_COMPLETED);
	assert_string_equal((char *)res->output[AL_STDOUT].data,
			    "from-bundle!\n640\n");
	assert_int_equal(res->n_outputs, 2);
	assert_string_equal(res->outputs[0].path, "out/copy.txt");
	assert_string_equal(res->outputs[0].artifact, "out-1");
	char hex[65];
	al_sha256_hex("from-bundle!\n", 13, hex);
	assert_string_equal(res->outputs[0].sha256, hex);
	assert_string_equal(res->outputs[1].path, "out/link.txt");
	assert_string_equal(res->outputs[1].refused_reason, "symlink");
	size_t len;
	char *data = read_artifact(dir, "out-1", &len);
	assert_int_equal(len, 13);
	assert_memory_equal(data, "from-bundle!\n", 13);
	free(data);
	data = read_artifact(dir, "log", &len);
	assert_string_equal(data, "from-bundle!\n640\n");
	free(data);
	al_result_free(res);
	assert_int_equal(al_remove_tree_at(AT_FDCWD, dir), 0);
	free(dir);
	al_manifest_free(m);
	al_bundle_free(b);
	al_request_free(shown);
	al_request_free(req);
}

static void test_local_runs_the_bundle(void **state)
{
	(void)state;
	run_bundle_not_request(&local, true, false);
}

static void test_sandbox_runs_the_bundle(void **state)
{
	(void)state;
	if (!sandbox_has(0))
		skip();
	run_bundle_not_request(&sandbox, false, false);
}

static void test_sandbox_bounded_runs_the_bundle(void **state)
{
	(void)state;
	if (!sandbox_has(AL_LIMIT_WORKSPACE_BYTES))
		skip();
	run_bundle_not_request(&sandbox, false, true);
}

/* Called directly (no host), a provider still refuses files without a
 * workspace and outputs without rw. */
static void test_providers_check_the_grant(void **state)
{
	(void)state;
	prov *ps[2] = {&local, &sandbox};
	for (int i = 0; i < 2; i++) {
		if (i == 1 && !sandbox_has(0))
			continue;
		al_request *req = make_request(i == 0, "echo RAN", "x");
		req->grant.workspace = AL_WORKSPACE_NONE;
		al_result *res = execute(ps[i], req, NULL, NULL, NULL);
		assert_int_equal(res->outcome, AL_OUTCOME_INVALID_REQUEST);
		assert_string_equal(res->reason, "files");
		al_result_free(res);
		al_request_free(req);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_local_refuses_a_mismatched_bundle),
		cmocka_unit_test(test_sandbox_refuses_a_mismatched_bundle),
		cmocka_unit_test(
			test_sandbox_bounded_refuses_a_mismatched_bundle),
		cmocka_unit_test(test_local_runs_the_bundle),
		cmocka_unit_test(test_sandbox_runs_the_bundle),
		cmocka_unit_test(test_sandbox_bounded_runs_the_bundle),
		cmocka_unit_test(test_providers_check_the_grant),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
