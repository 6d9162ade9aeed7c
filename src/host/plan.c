/* The canonical plan form (docs/host.md, "Content pins"):
 *
 *   "airlock-plan-v1\n" then items, each  LABEL SP LENGTH LF BYTES LF
 *
 * with LENGTH the decimal byte count.  Every item is length-prefixed, so
 * no choice of bytes can make two plans read alike; lists are sorted the
 * way the request stores them, so two requests that mean the same plan
 * hash the same. */
#include "host/plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/sha2.h>

static void item(struct sha256_ctx *c, const char *label, const void *data,
		 size_t len)
{
	char head[96];
	int n = snprintf(head, sizeof(head), "%s %zu\n", label, len);
	sha256_update(c, (size_t)n, (const uint8_t *)head);
	if (len)
		sha256_update(c, len, data);
	sha256_update(c, 1, (const uint8_t *)"\n");
}

static void str_item(struct sha256_ctx *c, const char *label, const char *s)
{
	item(c, label, s, strlen(s));
}

static void count_item(struct sha256_ctx *c, const char *label, size_t n)
{
	char num[32];
	snprintf(num, sizeof(num), "%zu", n);
	str_item(c, label, num);
}

static int cmp_file(const void *a, const void *b)
{
	const al_file *x = *(const al_file *const *)a;
	const al_file *y = *(const al_file *const *)b;
	return strcmp(x->path, y->path);
}

int al_plan_sha256(const al_request *req, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	static const char magic[] = "airlock-plan-v1\n";
	uint8_t md[SHA256_DIGEST_SIZE];
	struct sha256_ctx c;
	const al_file **files = NULL;

	if (req->n_files &&
	    (files = calloc(req->n_files, sizeof(const al_file *))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < req->n_files; i++)
		files[i] = &req->files[i];
	if (files)
		qsort(files, req->n_files, sizeof(const al_file *), cmp_file);
	sha256_init(&c);
	sha256_update(&c, sizeof(magic) - 1, (const uint8_t *)magic);
	str_item(&c, "language", req->language ? req->language : "");
	item(&c, "code", req->code.data, req->code.len);
	count_item(&c, "argv.count", req->argc);
	for (size_t i = 0; i < req->argc; i++)
		str_item(&c, "argv", req->argv[i]);
	/* env and toolchain are kept sorted by name (request parse) */
	count_item(&c, "env.count", req->n_env);
	for (size_t i = 0; i < req->n_env; i++) {
		str_item(&c, "env.name", req->env[i].name);
		str_item(&c, "env.value", req->env[i].value);
	}
	count_item(&c, "stdin.count", req->has_stdin ? 1 : 0);
	if (req->has_stdin)
		item(&c, "stdin", req->stdin_data.data, req->stdin_data.len);
	/* files keep the request's order; the plan sorts them by path */
	count_item(&c, "files.count", req->n_files);
	for (size_t i = 0; i < req->n_files; i++) {
		const al_file *f = files[i];
		char mode[8];
		snprintf(mode, sizeof(mode), "%04o", f->mode & 07777u);
		str_item(&c, "file.path", f->path);
		str_item(&c, "file.mode", mode);
		item(&c, "file.content", f->content.data, f->content.len);
	}
	free(files);
	count_item(&c, "toolchain.count", req->n_toolchain);
	for (size_t i = 0; i < req->n_toolchain; i++) {
		str_item(&c, "toolchain.id", req->toolchain[i].toolchain);
		str_item(&c, "toolchain.constraint",
			 req->toolchain[i].constraint);
	}
	/* Items added after v1, only when present, so the plans of requests
	 * without them hash as they always did. */
	if (req->name != NULL)
		str_item(&c, "name", req->name);
	if (req->exec != NULL) {
		count_item(&c, "exec.count", req->n_exec);
		for (size_t i = 0; i < req->n_exec; i++)
			str_item(&c, "exec", req->exec[i]);
	}
	if (req->image != NULL)
		str_item(&c, "image", req->image);
	if (req->n_build_flags > 0) {
		count_item(&c, "build_flags.count", req->n_build_flags);
		for (size_t i = 0; i < req->n_build_flags; i++)
			str_item(&c, "build_flag", req->build_flags[i]);
	}
	/* Judged cases run the program with their own stdin and argv. */
	if (req->n_tests > 0) {
		count_item(&c, "tests.count", req->n_tests);
		for (size_t i = 0; i < req->n_tests; i++) {
			const al_test_case *t = &req->tests[i];
			item(&c, "test.stdin", t->stdin_data.data,
			     t->stdin_data.len);
			if (!t->has_argv) {
				str_item(&c, "test.argv.count", "-");
				continue;
			}
			count_item(&c, "test.argv.count", t->argc);
			for (size_t j = 0; j < t->argc; j++)
				str_item(&c, "test.argv", t->argv[j]);
		}
	}
	sha256_digest(&c, sizeof(md), md);
	for (size_t i = 0; i < sizeof(md); i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[64] = '\0';
	return 0;
}

bool al_plan_code_only(const al_request *req)
{
	return req->argc == 0 && req->n_env == 0 && !req->has_stdin && req->name == NULL &&
	       req->exec == NULL && req->image == NULL &&
	       req->n_build_flags == 0 && req->n_tests == 0 &&
	       req->n_files == 0 && req->n_toolchain == 0;
}
