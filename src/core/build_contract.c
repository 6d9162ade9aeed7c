/* The contract's build and judged-test parts: build limits, build
 * results, test cases and their results (docs/contract.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <airlock/contract.h>

#include "core/build_contract.h"
#include "core/util.h"

void al_build_limits_apply_defaults(al_limits *l)
{
	if (!(l->set & AL_LIMIT_WALL_MS))
		l->wall_ms = AL_DEFAULT_BUILD_WALL_MS;
	if (!(l->set & AL_LIMIT_CPU_MS))
		l->cpu_ms = AL_DEFAULT_BUILD_CPU_MS;
	if (!(l->set & AL_LIMIT_MEMORY_BYTES))
		l->memory_bytes = AL_DEFAULT_BUILD_MEMORY_BYTES;
	if (!(l->set & AL_LIMIT_PIDS))
		l->pids = AL_DEFAULT_BUILD_PIDS;
	if (!(l->set & AL_LIMIT_OUTPUT_BYTES))
		l->output_bytes = AL_DEFAULT_BUILD_OUTPUT_BYTES;
}

void al_request_build_limits(const al_request *req, al_limits *out)
{
	al_limits b = req->build_limits;

	/* a request made without al_request_new has zeros here */
	al_build_limits_apply_defaults(&b);
	*out = req->limits;
	out->wall_ms = b.wall_ms;
	out->cpu_ms = b.cpu_ms;
	out->memory_bytes = b.memory_bytes;
	out->pids = b.pids;
	out->output_bytes = b.output_bytes;
	/* The compiler writes the artifact: the program's file-size bound
	 * is not the compiler's. */
	out->file_bytes = 0;
	out->set = (req->limits.set & ~AL_BUILD_LIMIT_BITS &
		    ~(unsigned)AL_LIMIT_FILE_BYTES) |
		   (b.set & AL_BUILD_LIMIT_BITS);
}

void al_case_limits(const al_request *req, const al_test_case *tc,
		    al_limits *out)
{
	*out = req->limits;
	for (unsigned bit = 1; bit < AL_LIMIT__ALL; bit <<= 1) {
		if (!(tc->limits.set & bit))
			continue;
		switch (bit) {
		case AL_LIMIT_WALL_MS: out->wall_ms = tc->limits.wall_ms; break;
		case AL_LIMIT_CPU_MS: out->cpu_ms = tc->limits.cpu_ms; break;
		case AL_LIMIT_MEMORY_BYTES: out->memory_bytes = tc->limits.memory_bytes; break;
		case AL_LIMIT_PIDS: out->pids = tc->limits.pids; break;
		case AL_LIMIT_OUTPUT_BYTES: out->output_bytes = tc->limits.output_bytes; break;
		case AL_LIMIT_FILE_BYTES: out->file_bytes = tc->limits.file_bytes; break;
		case AL_LIMIT_WORKSPACE_BYTES: out->workspace_bytes = tc->limits.workspace_bytes; break;
		case AL_LIMIT_OPEN_FILES: out->open_files = tc->limits.open_files; break;
		case AL_LIMIT_SOCKET_BYTES: out->socket_bytes = tc->limits.socket_bytes; break;
		case AL_LIMIT_STACK_BYTES: out->stack_bytes = tc->limits.stack_bytes; break;
		default: break;
		}
		out->set |= bit;
	}
}

static const char *const compare_names[] = { "exact", "trailing_whitespace" };

const char *al_compare_name(al_compare c)
{
	return (unsigned)c < 2 ? compare_names[c] : NULL;
}

int al_compare_from_name(const char *name, al_compare *out)
{
	for (unsigned i = 0; name && i < 2; i++)
		if (strcmp(name, compare_names[i]) == 0) {
			*out = (al_compare)i;
			return 0;
		}
	return -EINVAL;
}

const char *al_verdict_name(al_verdict v)
{
	switch (v) {
	case AL_VERDICT_ACCEPTED:
		return "accepted";
	case AL_VERDICT_WRONG_ANSWER:
		return "wrong_answer";
	default:
		return NULL;
	}
}

int al_verdict_from_name(const char *name, al_verdict *out)
{
	if (name && strcmp(name, "accepted") == 0)
		*out = AL_VERDICT_ACCEPTED;
	else if (name && strcmp(name, "wrong_answer") == 0)
		*out = AL_VERDICT_WRONG_ANSWER;
	else
		return -EINVAL;
	return 0;
}

void al_build_result_free(al_build_result *b)
{
	if (!b)
		return;
	free(b->reason);
	free(b->output[0].data);
	free(b->output[1].data);
	free(b);
}

al_build_result *al_build_result_dup(const al_build_result *src)
{
	al_build_result *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	*b = *src;
	b->reason = NULL;
	b->output[0] = (al_bytes){ 0 };
	b->output[1] = (al_bytes){ 0 };
	if (al_strdup_opt(src->reason, &b->reason) < 0 ||
	    al_bytes_dup(&src->output[0], &b->output[0]) < 0 ||
	    al_bytes_dup(&src->output[1], &b->output[1]) < 0) {
		al_build_result_free(b);
		return NULL;
	}
	return b;
}

void al_test_cases_free(al_test_case *t, size_t n)
{
	for (size_t i = 0; t && i < n; i++) {
		free(t[i].stdin_data.data);
		free(t[i].expected_stdout.data);
		al_strv_free(t[i].argv, t[i].argc);
	}
	free(t);
}

int al_test_cases_dup(const al_test_case *src, size_t n, al_test_case **out)
{
	al_test_case *t;

	*out = NULL;
	if (n == 0)
		return 0;
	t = calloc(n, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		t[i].has_argv = src[i].has_argv;
		t[i].has_expected = src[i].has_expected;
		t[i].limits = src[i].limits;
		if (al_bytes_dup(&src[i].stdin_data, &t[i].stdin_data) < 0 ||
		    al_bytes_dup(&src[i].expected_stdout, &t[i].expected_stdout) < 0 ||
		    al_strv_dup(src[i].argv, src[i].argc, &t[i].argv) < 0) {
			al_test_cases_free(t, n);
			return -ENOMEM;
		}
		t[i].argc = src[i].argc;
	}
	*out = t;
	return 0;
}

void al_case_results_free(al_case_result *c, size_t n)
{
	for (size_t i = 0; c && i < n; i++) {
		free(c[i].reason);
		free(c[i].output[0].data);
		free(c[i].output[1].data);
	}
	free(c);
}

void al_request_build_free(al_request *req)
{
	al_strv_free(req->build_flags, req->n_build_flags);
	al_test_cases_free(req->tests, req->n_tests);
	req->build_flags = NULL;
	req->tests = NULL;
	req->n_build_flags = req->n_tests = 0;
}

int al_request_build_dup(const al_request *src, al_request *dst)
{
	dst->build_limits = src->build_limits;
	dst->compare = src->compare;
	if (al_strv_dup(src->build_flags, src->n_build_flags, &dst->build_flags) < 0)
		return -ENOMEM;
	dst->n_build_flags = src->n_build_flags;
	if (al_test_cases_dup(src->tests, src->n_tests, &dst->tests) < 0)
		return -ENOMEM;
	dst->n_tests = src->n_tests;
	return 0;
}

void al_result_build_free(al_result *r)
{
	al_build_result_free(r->build);
	al_case_results_free(r->cases, r->n_cases);
	r->build = NULL;
	r->cases = NULL;
	r->n_cases = 0;
}

/* Trailing blanks of each line and trailing empty lines do not count. */
static size_t line_end(const unsigned char *d, size_t i, size_t n, size_t *next)
{
	size_t e = i;

	while (e < n && d[e] != '\n')
		e++;
	*next = e < n ? e + 1 : e;
	while (e > i && (d[e - 1] == ' ' || d[e - 1] == '\t' || d[e - 1] == '\r'))
		e--;
	return e;
}

static size_t content_end(const unsigned char *d, size_t n)
{
	while (n > 0 && (d[n - 1] == ' ' || d[n - 1] == '\t' ||
			 d[n - 1] == '\r' || d[n - 1] == '\n'))
		n--;
	return n;
}

bool al_output_matches(const al_bytes *got, const al_bytes *want, al_compare c)
{
	if (c == AL_COMPARE_EXACT)
		return got->len == want->len &&
		       (got->len == 0 || memcmp(got->data, want->data, got->len) == 0);
	size_t gn = content_end(got->data, got->len), wn = content_end(want->data, want->len);
	size_t gi = 0, wi = 0;

	while (gi < gn && wi < wn) {
		size_t gnext, wnext;
		size_t ge = line_end(got->data, gi, gn, &gnext);
		size_t we = line_end(want->data, wi, wn, &wnext);

		if (ge - gi != we - wi || memcmp(got->data + gi, want->data + wi, ge - gi) != 0)
			return false;
		gi = gnext;
		wi = wnext;
	}
	return gi >= gn && wi >= wn;
}
