/* Bundles and manifests: a request's code and files become one read-only
 * object with a manifest whose digest does not depend on the order of
 * files[]; hostile paths, duplicates, too many files or bytes, modes and
 * files or outputs without a workspace grant are invalid requests (built
 * in C as well as parsed from JSON); materialising writes exact bytes and
 * modes beneath directory descriptors, never through a link, and any
 * difference from the manifest is bundle_mismatch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <airlock/airlock.h>

#include "bundle/bundle.h"
#include "core/util.h"
#include "child/rundir.h"

static al_request *make_request(al_workspace_mode ws)
{
	al_request *req = al_request_new();
	assert_non_null(req);
	req->language = strdup("python");
	al_bytes_clear(&req->code);
	al_bytes_set(&req->code, "print(1)\n", 9);
	req->grant.workspace = ws;
	return req;
}

static void add_file(al_request *req, const char *path, const char *content,
		     size_t len, unsigned mode)
{
	al_file *v = realloc(req->files, (req->n_files + 1) * sizeof(*v));
	assert_non_null(v);
	req->files = v;
	al_file *f = &v[req->n_files++];
	memset(f, 0, sizeof(*f));
	f->path = path ? strdup(path) : NULL;
	al_bytes_set(&f->content, content, len);
	f->mode = mode;
}

static void add_output(al_request *req, const char *pattern)
{
	char **v = realloc(req->outputs, (req->n_outputs + 2) * sizeof(*v));
	assert_non_null(v);
	req->outputs = v;
	v[req->n_outputs++] = strdup(pattern);
	v[req->n_outputs] = NULL;
}

static void expect_invalid(const al_request *req, const char *reason)
{
	al_bundle *b = NULL;
	al_error *err = NULL;
	assert_int_equal(al_bundle_new(req, &b, &err), -EINVAL);
	assert_null(b);
	assert_int_equal(al_error_get_code(err), AL_ERR_INVALID_REQUEST);
	assert_string_equal(al_error_get_reason(err), reason);
	assert_null(strstr(al_error_get_message(err), "SECRET"));
	al_error_free(err);
}

static void test_bundle_and_manifest(void **state)
{
	(void)state;
	al_request *req = make_request(AL_WORKSPACE_RW);
	add_file(req, "data/z.csv", "z\n", 2, 0600);
	add_file(req, "data/in.csv", "a,b\n", 4, 0640);
	add_file(req, "bin.dat", "\0\1\2", 3, 0755);
	al_bundle *b = NULL;
	al_manifest *m = NULL;
	assert_int_equal(al_bundle_new(req, &b, NULL), 0);
	assert_int_equal(al_manifest_new(b, &m), 0);
	assert_int_equal(al_bundle_count(b), 4);
	const al_bundle_item *it = al_bundle_item_at(b, 0);
	assert_int_equal(it->kind, AL_BUNDLE_CODE);
	assert_string_equal(it->path, "main.py");
	assert_int_equal(it->mode, 0444);
	assert_memory_equal(it->data, "print(1)\n", 9);
	/* inputs sorted bytewise by path */
	assert_string_equal(al_bundle_item_at(b, 1)->path, "bin.dat");
	assert_string_equal(al_bundle_item_at(b, 2)->path, "data/in.csv");
	assert_string_equal(al_bundle_item_at(b, 3)->path, "data/z.csv");
	assert_int_equal(al_bundle_item_at(b, 1)->len, 3);
	assert_memory_equal(al_bundle_item_at(b, 1)->data, "\0\1\2", 3);
	assert_null(al_bundle_item_at(b, 4));
	assert_int_equal(m->total_bytes, 9 + 3 + 4 + 2);

	char code_sha[65], in_sha[65], digest[65];
	al_sha256_hex("print(1)\n", 9, code_sha);
	al_sha256_hex("a,b\n", 4, in_sha);
	assert_string_equal(m->entries[0].sha256, code_sha);
	assert_string_equal(m->entries[2].sha256, in_sha);
	char *text = al_manifest_canonical(m);
	char *expect = al_strdup_printf("code 0444 9 %s main.py\n", code_sha);
	assert_non_null(strstr(text, expect));
	free(expect);
	expect = al_strdup_printf("input 0640 4 %s data/in.csv\n", in_sha);
	assert_non_null(strstr(text, expect));
	free(expect);
	assert_memory_equal(text, "airlock-manifest 1\n", 19);
	al_sha256_hex(text, strlen(text), digest);
	assert_string_equal(m->digest, digest);
	free(text);
	assert_int_equal(al_manifest_check(m, b, NULL), 0);

	/* the same files in another order: the same digest */
	al_request *req2 = make_request(AL_WORKSPACE_RO);
	add_file(req2, "bin.dat", "\0\1\2", 3, 0755);
	add_file(req2, "data/in.csv", "a,b\n", 4, 0640);
	add_file(req2, "data/z.csv", "z\n", 2, 0600);
	al_bundle *b2 = NULL;
	al_manifest *m2 = NULL;
	assert_int_equal(al_bundle_new(req2, &b2, NULL), 0);
	assert_int_equal(al_manifest_new(b2, &m2), 0);
	assert_string_equal(m->digest, m2->digest);
	/* a manifest of one bundle does not describe another */
	al_bundle_free(b2);
	req2->files[0].mode = 0700;
	assert_int_equal(al_bundle_new(req2, &b2, NULL), 0);
	al_error *err = NULL;
	assert_int_equal(al_manifest_check(m, b2, &err), -EBADMSG);
	assert_string_equal(al_error_get_reason(err), "bundle_mismatch");
	al_error_free(err);

	al_manifest_free(m2);
	al_bundle_free(b2);
	al_manifest_free(m);
	al_bundle_free(b);
	al_request_free(req2);
	al_request_free(req);
}

static void test_unknown_language_is_main(void **state)
{
	(void)state;
	al_request *req = make_request(AL_WORKSPACE_NONE);
	free(req->language);
	req->language = strdup("cobol");
	al_bundle *b = NULL;
	assert_int_equal(al_bundle_new(req, &b, NULL), 0);
	assert_string_equal(al_bundle_item_at(b, 0)->path, "main");
	al_bundle_free(b);
	al_request_free(req);
}

/* The bundle's memory is read-only: a write faults (in a child). */
static void test_bundle_is_read_only(void **state)
{
	(void)state;
	al_request *req = make_request(AL_WORKSPACE_RW);
	add_file(req, "in.txt", "hello", 5, 0644);
	al_bundle *b = NULL;
	assert_int_equal(al_bundle_new(req, &b, NULL), 0);
	const al_bundle_item *it = al_bundle_item_at(b, 1);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		volatile unsigned char *p = (volatile unsigned char *)it->data;
		p[0] = 'J';
		_exit(0); /* reached only if the write went through */
	}
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_memory_equal(it->data, "hello", 5);
	al_bundle_free(b);
	al_request_free(req);
}

static void test_hostile_requests_built_in_c(void **state)
{
	(void)state;
	static const char *const bad_paths[] = {
		"../SECRET", "/etc/SECRET", "a/../SECRET", "a//SECRET",
		"SECRET/", ".", "a/./SECRET", "", "SECRET\n", "a*SECRET",
	};
	for (size_t i = 0; i < sizeof(bad_paths) / sizeof(*bad_paths); i++) {
		al_request *req = make_request(AL_WORKSPACE_RW);
		add_file(req, "ok.txt", "x", 1, 0644);
		add_file(req, bad_paths[i], "x", 1, 0644);
		expect_invalid(req, "files[1].path");
		al_request_free(req);
	}
	al_request *req = make_request(AL_WORKSPACE_RW);
	add_file(req, NULL, "x", 1, 0644);
	expect_invalid(req, "files[0].path");
	al_request_free(req);

	/* duplicates and nesting */
	req = make_request(AL_WORKSPACE_RW);
	add_file(req, "a/b", "x", 1, 0644);
	add_file(req, "a/b", "y", 1, 0644);
	expect_invalid(req, "files[1].path");
	al_request_free(req);
	req = make_request(AL_WORKSPACE_RW);
	add_file(req, "a", "x", 1, 0644);
	add_file(req, "a/b", "y", 1, 0644);
	expect_invalid(req, "files[1].path");
	al_request_free(req);

	/* modes with setuid/setgid/sticky bits */
	req = make_request(AL_WORKSPACE_RW);
	add_file(req, "x", "x", 1, 04755);
	expect_invalid(req, "files[0].mode");
	al_request_free(req);

	/* too many files, too many bytes */
	req = make_request(AL_WORKSPACE_RW);
	for (unsigned i = 0; i <= AL_MAX_FILES; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%u", i);
		add_file(req, name, "", 0, 0644);
	}
	expect_invalid(req, "files");
	al_request_free(req);
	req = make_request(AL_WORKSPACE_RW);
	size_t half = AL_MAX_FILES_TOTAL_BYTES / 2 + 1;
	char *big = calloc(1, half);
	assert_non_null(big);
	add_file(req, "a", big, half, 0644);
	add_file(req, "b", big, half, 0644);
	free(big);
	expect_invalid(req, "files");
	al_request_free(req);

	/* code with a NUL */
	req = make_request(AL_WORKSPACE_NONE);
	al_bytes_clear(&req->code);
	al_bytes_set(&req->code, "a\0b", 3);
	expect_invalid(req, "code");
	al_request_free(req);

	/* outputs: escapes, duplicates, too many */
	static const char *const bad_outputs[] = {"../SECRET", "/SECRET",
						  "a/**/b", "a[0]", "a/"};
	for (size_t i = 0; i < sizeof(bad_outputs) / sizeof(*bad_outputs); i++) {
		req = make_request(AL_WORKSPACE_RW);
		add_output(req, bad_outputs[i]);
		expect_invalid(req, "outputs[0]");
		al_request_free(req);
	}
	req = make_request(AL_WORKSPACE_RW);
	add_output(req, "out/*.json");
	add_output(req, "out/*.json");
	expect_invalid(req, "outputs[1]");
	al_request_free(req);
	req = make_request(AL_WORKSPACE_RW);
	for (unsigned i = 0; i <= AL_MAX_OUTPUTS; i++) {
		char name[32];
		snprintf(name, sizeof(name), "o%u", i);
		add_output(req, name);
	}
	expect_invalid(req, "outputs");
	al_request_free(req);
}

/* The request contradicting its own grant is invalid_request. */
static void test_workspace_grant_rules(void **state)
{
	(void)state;
	al_request *req = make_request(AL_WORKSPACE_NONE);
	add_file(req, "in.txt", "x", 1, 0644);
	expect_invalid(req, "files");
	req->grant.workspace = AL_WORKSPACE_RO;
	assert_int_equal(al_bundle_request_check(req, NULL), 0);
	add_output(req, "out.txt");
	expect_invalid(req, "outputs");
	req->grant.workspace = AL_WORKSPACE_RW;
	assert_int_equal(al_bundle_request_check(req, NULL), 0);
	al_request_free(req);
}

/* The codec refuses the same hostile files[] and outputs[] in JSON. */
static void test_hostile_requests_in_json(void **state)
{
	(void)state;
	static const struct {
		const char *files;
		const char *reason;
	} cases[] = {
		{"\"files\":[{\"path\":\"../SECRET\",\"content\":\"\"}]",
		 "files[0].path"},
		{"\"files\":[{\"path\":\"/etc/SECRET\",\"content\":\"\"}]",
		 "files[0].path"},
		{"\"files\":[{\"path\":\"a\\u0000SECRET\",\"content\":\"\"}]",
		 "files[0].path"},
		{"\"files\":[{\"path\":\"a\",\"content\":\"\"},"
		 "{\"path\":\"a\",\"content\":\"SECRET\"}]",
		 "files[1].path"},
		{"\"files\":[{\"path\":\"a\",\"content\":\"\",\"mode\":\"4755\"}]",
		 "files[0].mode"},
		{"\"outputs\":[\"../SECRET\"]", "outputs[0]"},
		{"\"outputs\":[\"a/../../SECRET\"]", "outputs[0]"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char *json = al_strdup_printf(
			"{\"language\":\"sh\",\"code\":\"\","
			"\"grant\":{\"workspace\":\"rw\"},%s}",
			cases[i].files);
		al_request *req = NULL;
		al_error *err = NULL;
		assert_true(al_request_from_json(json, strlen(json), &req,
						 &err) < 0);
		assert_string_equal(al_error_get_reason(err), cases[i].reason);
		assert_null(strstr(al_error_get_message(err), "SECRET"));
		al_error_free(err);
		free(json);
	}
	/* too many files / bytes */
	char *json = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&json, &len);
	fputs("{\"language\":\"sh\",\"code\":\"\",\"grant\":{\"workspace\":"
	      "\"rw\"},\"files\":[", f);
	for (unsigned i = 0; i <= AL_MAX_FILES; i++)
		fprintf(f, "%s{\"path\":\"f%u\",\"content\":\"\"}", i ? "," : "",
			i);
	fputs("]}", f);
	fclose(f);
	al_request *req = NULL;
	al_error *err = NULL;
	assert_true(al_request_from_json(json, len, &req, &err) < 0);
	assert_string_equal(al_error_get_reason(err), "files");
	al_error_free(err);
	free(json);
}

/* ---- materialising ----------------------------------------------------- */

static char *make_tmpdir(void)
{
	char tmpl[] = "/tmp/al-bundle-XXXXXX";
	assert_non_null(mkdtemp(tmpl));
	return strdup(tmpl);
}

static void remove_dir(char *path)
{
	assert_int_equal(al_remove_tree_at(AT_FDCWD, path), 0);
	free(path);
}

static int open_dir(const char *base, const char *sub)
{
	char *p = al_strdup_printf("%s/%s", base, sub);
	mkdir(p, 0700);
	int fd = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	free(p);
	return fd;
}

static void read_file(const char *base, const char *rel, char *buf,
		      size_t cap, size_t *len, mode_t *mode)
{
	char *p = al_strdup_printf("%s/%s", base, rel);
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	*mode = st.st_mode & 07777;
	int fd = open(p, O_RDONLY);
	assert_true(fd >= 0);
	ssize_t n = read(fd, buf, cap);
	assert_true(n >= 0);
	*len = (size_t)n;
	close(fd);
	free(p);
}

static void test_materialise(void **state)
{
	(void)state;
	mode_t old = umask(077); /* modes are exact whatever the umask */
	char *dir = make_tmpdir();
	int code_fd = open_dir(dir, "code"), ws_fd = open_dir(dir, "ws");
	al_request *req = make_request(AL_WORKSPACE_RW);
	add_file(req, "data/in.csv", "a,b\n", 4, 0640);
	add_file(req, "run.sh", "#!/bin/sh\n", 10, 0755);
	add_file(req, "secret", "s", 1, 0);
	al_bundle *b = NULL;
	al_manifest *m = NULL;
	assert_int_equal(al_bundle_new(req, &b, NULL), 0);
	assert_int_equal(al_manifest_new(b, &m), 0);
	assert_int_equal(al_bundle_materialise(b, m, code_fd, ws_fd, (uid_t)-1,
					       (gid_t)-1, NULL),
			 0);
	char buf[64];
	size_t len;
	mode_t mode;
	read_file(dir, "code/main.py", buf, sizeof(buf), &len, &mode);
	assert_int_equal(len, 9);
	assert_memory_equal(buf, "print(1)\n", 9);
	assert_int_equal(mode, 0444);
	read_file(dir, "ws/data/in.csv", buf, sizeof(buf), &len, &mode);
	assert_int_equal(len, 4);
	assert_int_equal(mode, 0640);
	read_file(dir, "ws/run.sh", buf, sizeof(buf), &len, &mode);
	assert_int_equal(mode, 0755);
	struct stat st;
	char *p = al_strdup_printf("%s/ws/data", dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	free(p);
	p = al_strdup_printf("%s/ws/secret", dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0);
	free(p);

	/* what was written is what the manifest says */
	assert_int_equal(al_bundle_verify_inputs(m, ws_fd, NULL), 0);
	/* a changed byte, a changed mode, a link: mismatch */
	p = al_strdup_printf("%s/ws/data/in.csv", dir);
	int fd = open(p, O_WRONLY);
	assert_int_equal(write(fd, "X", 1), 1);
	close(fd);
	al_error *err = NULL;
	assert_true(al_bundle_verify_inputs(m, ws_fd, &err) < 0);
	assert_string_equal(al_error_get_reason(err), "bundle_mismatch");
	al_error_free(err);
	err = NULL;
	assert_int_equal(unlink(p), 0);
	char *outside = al_strdup_printf("%s/outside.csv", dir);
	fd = open(outside, O_WRONLY | O_CREAT, 0640);
	assert_int_equal(write(fd, "a,b\n", 4), 4);
	close(fd);
	assert_int_equal(symlink(outside, p), 0);
	assert_true(al_bundle_verify_inputs(m, ws_fd, &err) < 0);
	assert_string_equal(al_error_get_reason(err), "bundle_mismatch");
	al_error_free(err);
	free(outside);
	free(p);

	al_manifest_free(m);
	al_bundle_free(b);
	al_request_free(req);
	close(code_fd);
	close(ws_fd);
	remove_dir(dir);
	umask(old);
}

/* Nothing is written through a link or over an existing name, and a
 * manifest that does not match the bytes refuses the run. */
static void test_materialise_refuses(void **state)
{
	(void)state;
	char *dir = make_tmpdir();
	char *target = al_strdup_printf("%s/target", dir);
	assert_int_equal(mkdir(target, 0700), 0);
	int ws_fd = open_dir(dir, "ws");
	al_request *req = make_request(AL_WORKSPACE_RW);
	add_file(req, "data/in.csv", "a,b\n", 4, 0640);
	al_bundle *b = NULL;
	al_manifest *m = NULL;
	assert_int_equal(al_bundle_new(req, &b, NULL), 0);
	assert_int_equal(al_manifest_new(b, &m), 0);

	/* a planted link as a parent directory */
	assert_int_equal(symlinkat(target, ws_fd, "data"), 0);
	al_error *err = NULL;
	assert_true(al_bundle_materialise(b, m, -1, ws_fd, (uid_t)-1,
					  (gid_t)-1, &err) < 0);
	assert_string_equal(al_error_get_reason(err), "workspace_setup_failed");
	al_error_free(err);
	err = NULL;
	char *p = al_strdup_printf("%s/in.csv", target);
	assert_int_equal(access(p, F_OK), -1);
	free(p);
	/* a planted link as the file itself */
	assert_int_equal(unlinkat(ws_fd, "data", 0), 0);
	assert_int_equal(mkdirat(ws_fd, "data", 0755), 0);
	p = al_strdup_printf("%s/victim", target);
	assert_int_equal(symlinkat(p, ws_fd, "data/in.csv"), 0);
	assert_true(al_bundle_materialise(b, m, -1, ws_fd, (uid_t)-1,
					  (gid_t)-1, &err) < 0);
	assert_string_equal(al_error_get_reason(err), "workspace_setup_failed");
	al_error_free(err);
	err = NULL;
	assert_int_equal(access(p, F_OK), -1);
	free(p);
	assert_int_equal(unlinkat(ws_fd, "data/in.csv", 0), 0);

	/* a manifest whose hash differs from the bytes */
	m->entries[1].sha256[0] = m->entries[1].sha256[0] == '0' ? '1' : '0';
	char *text = al_manifest_canonical(m);
	al_sha256_hex(text, strlen(text), m->digest);
	free(text);
	assert_int_equal(al_manifest_check(m, b, NULL), 0);
	assert_true(al_bundle_materialise(b, m, -1, ws_fd, (uid_t)-1,
					  (gid_t)-1, &err) < 0);
	assert_string_equal(al_error_get_reason(err), "bundle_mismatch");
	al_error_free(err);
	err = NULL;
	/* a manifest whose digest does not cover its entries */
	m->digest[0] = m->digest[0] == '0' ? '1' : '0';
	assert_true(al_manifest_check(m, b, &err) < 0);
	assert_string_equal(al_error_get_reason(err), "bundle_mismatch");
	al_error_free(err);

	al_manifest_free(m);
	al_bundle_free(b);
	al_request_free(req);
	close(ws_fd);
	free(target);
	remove_dir(dir);
}

/* A provider given no bundle builds one from the request; one given a
 * bundle with a foreign manifest refuses. */
static void test_bundle_use(void **state)
{
	(void)state;
	al_request *req = make_request(AL_WORKSPACE_RW);
	add_file(req, "a", "1", 1, 0644);
	al_exec exec = {.run_id = "r", .request = req};
	al_bundle_use u;
	assert_int_equal(al_bundle_use_init(&u, &exec, NULL), 0);
	assert_int_equal(al_bundle_count(u.bundle), 2);
	al_request *other = make_request(AL_WORKSPACE_RW);
	add_file(other, "a", "2", 1, 0644);
	al_bundle *ob = NULL;
	al_manifest *om = NULL;
	assert_int_equal(al_bundle_new(other, &ob, NULL), 0);
	assert_int_equal(al_manifest_new(ob, &om), 0);
	/* same shape, other bytes: the check of the written bytes fails */
	al_exec mixed = {.run_id = "r", .request = req, .bundle = u.bundle,
			 .manifest = om};
	al_bundle_use u2;
	assert_int_equal(al_bundle_use_init(&u2, &mixed, NULL), 0);
	char *dir = make_tmpdir();
	int ws_fd = open_dir(dir, "ws");
	al_error *err = NULL;
	assert_true(al_bundle_materialise(u2.bundle, u2.manifest, -1, ws_fd,
					  (uid_t)-1, (gid_t)-1, &err) < 0);
	assert_string_equal(al_error_get_reason(err), "bundle_mismatch");
	al_error_free(err);
	err = NULL;
	al_bundle_use_clear(&u2);
	/* a bundle without a manifest */
	al_exec half = {.run_id = "r", .request = req, .bundle = u.bundle};
	assert_true(al_bundle_use_init(&u2, &half, &err) < 0);
	assert_string_equal(al_error_get_reason(err), "bundle_mismatch");
	al_error_free(err);
	al_bundle_use_clear(&u2);
	close(ws_fd);
	remove_dir(dir);
	al_manifest_free(om);
	al_bundle_free(ob);
	al_request_free(other);
	al_bundle_use_clear(&u);
	al_request_free(req);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bundle_and_manifest),
		cmocka_unit_test(test_unknown_language_is_main),
		cmocka_unit_test(test_bundle_is_read_only),
		cmocka_unit_test(test_hostile_requests_built_in_c),
		cmocka_unit_test(test_workspace_grant_rules),
		cmocka_unit_test(test_hostile_requests_in_json),
		cmocka_unit_test(test_materialise),
		cmocka_unit_test(test_materialise_refuses),
		cmocka_unit_test(test_bundle_use),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
