/* Kit cases about the provider itself: its facts, ensure/health/release,
 * the disabled and unavailable families, languages (absent, unknown, each
 * present one run and versioned), grants and streaming. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kit/kit.h"
#include "kit/kit_cases.h"

/* ---- facts -------------------------------------------------------------- */

void kit_case_probe_facts(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	const al_facts *f = k->facts;
	if (k->probe_rc < 0 || f == NULL) {
		kit_fail(c, "probe returned %d (%s); a missing mechanism is a "
			    "fact (available=false), not a probe failure",
			 k->probe_rc, k->probe_error ? k->probe_error : "?");
		return;
	}
	if (f->provider == NULL || strcmp(f->provider, k->ops->id) != 0) {
		kit_fail(c, "facts.provider \"%s\" differs from ops->id \"%s\"",
			 f->provider ? f->provider : "(null)", k->ops->id);
		return;
	}
	if (al_safety_class_name(f->safety_class) == NULL) {
		kit_fail(c, "facts.safety_class %d is out of range",
			 (int)f->safety_class);
		return;
	}
	if (!f->available && (f->unavailable_reason == NULL ||
			      *f->unavailable_reason == '\0')) {
		kit_fail(c, "available=false needs an unavailable_reason");
		return;
	}
	if (f->available && f->unavailable_reason != NULL) {
		kit_fail(c, "available=true with an unavailable_reason");
		return;
	}
	if ((f->limits & ~(unsigned)AL_LIMIT__ALL) || (f->network & ~7u) ||
	    (f->workspace & ~7u)) {
		kit_fail(c, "facts carry unknown limit/network/workspace bits");
		return;
	}
	for (size_t i = 0; i < f->n_languages; i++) {
		const al_language_fact *l = &f->languages[i];
		if (l->language == NULL || l->toolchain == NULL ||
		    *l->toolchain == '\0' || l->path == NULL ||
		    l->path[0] != '/') {
			kit_fail(c, "language fact %zu (%s) needs a toolchain "
				    "id and an absolute interpreter path",
				 i, l->language ? l->language : "(null)");
			return;
		}
	}
	if (f->mechanism_json != NULL) {
		json_error_t je;
		json_t *m = json_loads(f->mechanism_json, 0, &je);
		bool ok = m != NULL && json_is_object(m);
		json_decref(m);
		if (!ok) {
			kit_fail(c, "facts.mechanism is not a JSON object");
			return;
		}
	}
	if (f->safety_class == AL_SAFETY_DISABLED && f->n_languages > 0) {
		kit_fail(c, "a disabled provider reports %zu languages",
			 f->n_languages);
		return;
	}
	kit_pass(c);
}

/* ---- ensure / health / release ---------------------------------------- */

void kit_case_ensure(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	al_error *err = NULL;
	if (k->facts == NULL) {
		kit_fail(c, "not attempted: the probe failed");
		return;
	}
	int rc = k->ops->ensure(k->config_json, &k->handle, &err);
	if (rc < 0) {
		k->handle = NULL;
		k->ensure_error = strdup(al_error_get_message(err));
		if (!k->facts->available &&
		    k->facts->safety_class != AL_SAFETY_DISABLED)
			kit_pass(c); /* unavailable: refusing a handle is right */
		else
			kit_fail(c, "ensure returned %d (%s)", rc,
				 al_error_get_message(err));
	} else if (k->handle == NULL) {
		kit_fail(c, "ensure returned 0 but no handle");
	} else {
		kit_pass(c);
	}
	al_error_free(err);
}

void kit_case_health(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	al_error *err = NULL;
	if (k->handle == NULL && k->facts != NULL && !k->facts->available &&
	    k->facts->safety_class != AL_SAFETY_DISABLED) {
		kit_skip(c, "facts: unavailable and ensure gave no handle");
		return;
	}
	if (k->facts == NULL || k->handle == NULL) {
		kit_fail(c, "no handle (see provider.ensure)");
		return;
	}
	if (!k->facts->available &&
	    k->facts->safety_class != AL_SAFETY_DISABLED) {
		kit_skip(c, "facts: unavailable; health of its handle is not "
			    "required to pass");
		return;
	}
	int rc = k->ops->health(k->handle, &err);
	if (rc < 0)
		kit_fail(c, "health returned %d (%s) on a fresh handle", rc,
			 al_error_get_message(err));
	else
		kit_pass(c);
	al_error_free(err);
}

void kit_case_release(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	al_error *err = NULL;
	if (k->handle == NULL) {
		if (k->facts != NULL && !k->facts->available &&
		    k->facts->safety_class != AL_SAFETY_DISABLED)
			kit_skip(c, "facts: unavailable and ensure gave no "
				    "handle");
		else
			kit_fail(c, "no handle to release (see "
				    "provider.ensure)");
		return;
	}
	int rc = k->ops->release(k->handle, &err);
	k->handle = NULL;
	if (rc < 0)
		kit_fail(c, "release returned %d (%s): the host must "
			    "quarantine this handle",
			 rc, al_error_get_message(err));
	else
		kit_pass(c);
	al_error_free(err);
}

/* ---- the disabled and unavailable families ----------------------------- */

/* Runs req; expects a refusal with `want` and that the program (which
 * would create `marker` on the host) did not run. */
static bool refused_nothing_ran(kit_ctx *k, kit_case *c, al_request *req,
				al_outcome want, const char *marker,
				const char *what)
{
	kit_run r = {0};
	struct stat st;
	bool ok = false;
	if (req == NULL)
		return false;
	if (kit_exec(k, c, req, NULL, &r) < 0)
		goto out;
	if (r.res->outcome != want) {
		kit_fail(c, "%s: expected %s; saw %s", what,
			 al_outcome_name(want), kit_describe(r.res));
		goto out;
	}
	if (!kit_expect_refusal(c, &r, want))
		goto out;
	if (stat(marker, &st) == 0) {
		kit_fail(c, "%s: refused as %s but the program ran (it "
			    "created %s)",
			 what, al_outcome_name(want), marker);
		goto out;
	}
	ok = true;
out:
	kit_run_clear(&r);
	al_request_free(req);
	return ok;
}

static void marker_code(kit_ctx *k, char *marker, size_t mlen, char *sh,
			char *py, size_t clen)
{
	char tok[40], name[64];
	kit_token(k, tok, sizeof(tok));
	snprintf(name, sizeof(name), "ran-%s", tok);
	kit_host_path(k, name, marker, mlen);
	snprintf(sh, clen, "echo ran > '%s'\n", marker);
	snprintf(py, clen, "open('%s', 'w').write('ran')\n", marker);
}

void kit_case_disabled(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	char marker[PATH_MAX], sh[PATH_MAX + 64], py[PATH_MAX + 64];
	if (k->facts == NULL) {
		kit_fail(c, "no facts (see probe.facts)");
		return;
	}
	if (k->facts->safety_class != AL_SAFETY_DISABLED) {
		kit_skip(c, "facts: safety class %s, not disabled",
			 al_safety_class_name(k->facts->safety_class));
		return;
	}
	if (k->handle == NULL) {
		kit_fail(c, "no handle (see provider.ensure)");
		return;
	}
	static const char *const langs[] = {"sh", "python", "cobol-xyz"};
	for (size_t i = 0; i < 3; i++) {
		marker_code(k, marker, sizeof(marker), sh, py, sizeof(sh));
		al_request *req = kit_req_lang(k, c, langs[i],
					       i == 1 ? py : sh);
		if (!refused_nothing_ran(k, c, req, AL_OUTCOME_DISABLED,
					 marker, langs[i]))
			return;
	}
	/* Explicit limits, stdin and env: still disabled, not a limit
	 * refusal. */
	marker_code(k, marker, sizeof(marker), sh, py, sizeof(sh));
	al_request *req = kit_req_lang(k, c, "sh", sh);
	if (req != NULL) {
		for (unsigned b = 1; b & AL_LIMIT__ALL; b <<= 1)
			kit_req_limit(req, b, 1000000);
		if (kit_req_stdin(req, "x", 1) < 0 ||
		    kit_req_env(req, "KIT_X", "1") < 0) {
			al_request_free(req);
			kit_fail(c, "out of memory");
			return;
		}
	}
	if (!refused_nothing_ran(k, c, req, AL_OUTCOME_DISABLED, marker,
				 "every limit set"))
		return;
	kit_pass(c);
}

void kit_case_unavailable(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	char marker[PATH_MAX], sh[PATH_MAX + 64], py[PATH_MAX + 64];
	if (k->facts == NULL) {
		kit_fail(c, "no facts (see probe.facts)");
		return;
	}
	if (k->facts->available ||
	    k->facts->safety_class == AL_SAFETY_DISABLED) {
		kit_skip(c, "facts: %s",
			 k->facts->available ? "available"
					     : "safety class disabled");
		return;
	}
	if (k->handle == NULL) {
		/* Refusing a handle is right; there is nothing to run. */
		kit_skip(c, "facts: unavailable and ensure gave no handle");
		return;
	}
	marker_code(k, marker, sizeof(marker), sh, py, sizeof(sh));
	if (refused_nothing_ran(k, c, kit_req_lang(k, c, "sh", sh),
				AL_OUTCOME_UNAVAILABLE, marker, "sh"))
		kit_pass(c);
}

/* ---- languages ---------------------------------------------------------- */

static bool need_available(kit_ctx *k, kit_case *c)
{
	if (k->facts == NULL || k->facts->safety_class == AL_SAFETY_DISABLED ||
	    !k->facts->available)
		return kit_need_runner(k, c); /* skips with the facts' why */
	if (k->handle == NULL) {
		kit_fail(c, "no handle (see provider.ensure)");
		return false;
	}
	return true;
}

static void expect_unsupported(kit_ctx *k, kit_case *c, const char *lang)
{
	kit_run r = {0};
	al_request *req = kit_req_lang(k, c, lang, "x\n");
	if (req == NULL)
		return;
	if (kit_exec(k, c, req, NULL, &r) >= 0 &&
	    kit_expect_refusal(c, &r, AL_OUTCOME_UNSUPPORTED_LANGUAGE))
		kit_pass(c);
	kit_run_clear(&r);
	al_request_free(req);
}

void kit_case_language_absent(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	static const char *const order[] = {"powershell", "ruby", "javascript",
					    "typescript", "python", "bash",
					    "sh", NULL};
	if (!need_available(k, c))
		return;
	for (size_t i = 0; order[i] != NULL; i++) {
		if (al_facts_find_language(k->facts, order[i]) == NULL) {
			expect_unsupported(k, c, order[i]);
			return;
		}
	}
	kit_skip(c, "facts: every contract language is present");
}

void kit_case_language_unknown(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	if (need_available(k, c))
		expect_unsupported(k, c, "cobol-xyz");
}

/* One program per contract language: prints its runtime version (or a
 * greeting where no version is printable), compared to the facts. */
typedef struct lang_probe {
	const char *language;
	const char *code;
	const char *strip; /* prefix the program prints before the version */
	bool prefix_ok;	   /* printed text may continue after the version */
} lang_probe;

static const lang_probe probes[] = {
	{"sh", NULL, NULL, false},
	{"bash", "printf '%s\\n' \"$BASH_VERSION\"\n", NULL, true},
	{"python", "import platform\nprint(platform.python_version())\n", NULL,
	 false},
	{"javascript", "console.log(process.version)\n", "v", false},
	{"typescript", NULL, NULL, false},
	{"ruby", "puts RUBY_VERSION\n", NULL, false},
	{"powershell",
	 "Write-Output $PSVersionTable.PSVersion.ToString()\n", NULL, true},
	{NULL, NULL, NULL, false},
};

void kit_case_language_runs(kit_ctx *k, kit_case *c, const void *arg)
{
	const char *language = arg;
	const lang_probe *p = probes;
	kit_run r = {0};
	al_request *req = NULL;
	while (p->language != NULL && strcmp(p->language, language) != 0)
		p++;
	if (!kit_need_language(k, c, language))
		return;
	const al_language_fact *lf = al_facts_find_language(k->facts, language);
	const char *code = p->code;
	if (code == NULL) /* no version a program can print: run it */
		code = strcmp(language, "typescript") == 0
			       ? "const kit: string = 'kit-hello';\n"
				 "console.log(kit);\n"
			       : "echo kit-hello\n";
	req = kit_req_lang(k, c, language, code);
	if (req == NULL)
		return;
	if (kit_exec(k, c, req, NULL, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	char got[128];
	snprintf(got, sizeof(got), "%s", kit_out(r.res, AL_STDOUT));
	got[strcspn(got, "\r\n")] = '\0';
	if (p->code == NULL) {
		if (strcmp(got, "kit-hello") != 0)
			kit_fail(c, "expected \"kit-hello\"; saw %s",
				 kit_describe(r.res));
		else
			kit_pass(c);
		goto out;
	}
	const char *v = got;
	if (p->strip != NULL && strncmp(v, p->strip, strlen(p->strip)) == 0)
		v += strlen(p->strip);
	const char *want = lf->version != NULL ? lf->version : "";
	bool ok = *want != '\0' &&
		  (p->prefix_ok ? strncmp(v, want, strlen(want)) == 0
				: strcmp(v, want) == 0);
	if (!ok)
		kit_fail(c, "probe reports %s version \"%s\" but the program "
			    "inside the provider prints \"%s\"",
			 language, want, got);
	else
		kit_pass(c);
out:
	kit_run_clear(&r);
	al_request_free(req);
}

/* ---- grants and streaming ------------------------------------------------ */

void kit_case_network_unoffered(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	if (!kit_need_runner(k, c))
		return;
	bool tried = false;
	for (int m = AL_NETWORK_NONE; m <= AL_NETWORK_HOST; m++) {
		if (k->facts->network & (1u << m))
			continue;
		kit_run r = {0};
		al_request *req = kit_req(k, c, "echo ran\n", "print('ran')\n");
		if (req == NULL)
			return;
		req->grant.network = (al_network)m;
		tried = true;
		bool ok = kit_exec(k, c, req, NULL, &r) >= 0 &&
			  kit_expect_refusal(c, &r,
					     AL_OUTCOME_UNENFORCEABLE_LIMIT);
		kit_run_clear(&r);
		al_request_free(req);
		if (!ok)
			return;
	}
	if (tried)
		kit_pass(c);
	else
		kit_skip(c, "facts: every network mode is offered");
}

void kit_case_workspace_modes(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	if (!kit_need_runner(k, c))
		return;
	bool tried = false;
	for (int m = AL_WORKSPACE_RO; m <= AL_WORKSPACE_RW; m++) {
		if (!(k->facts->workspace & (1u << m)))
			continue;
		kit_run r = {0};
		al_request *req = kit_req(
			k, c,
			"if echo x > kit-ws 2>/dev/null; then echo WROTE; "
			"else echo REFUSED; fi\n",
			"try:\n    open('kit-ws', 'w').write('x')\n"
			"    print('WROTE')\nexcept OSError:\n"
			"    print('REFUSED')\n");
		if (req == NULL)
			return;
		req->grant.workspace = (al_workspace_mode)m;
		tried = true;
		const char *want = m == AL_WORKSPACE_RW ? "WROTE" : "REFUSED";
		bool ok = kit_exec(k, c, req, NULL, &r) >= 0 &&
			  kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED);
		if (ok && !kit_out_has(r.res, AL_STDOUT, want)) {
			kit_fail(c, "workspace %s: writing the working "
				    "directory should print %s; saw %s",
				 al_workspace_mode_name((al_workspace_mode)m),
				 want, kit_describe(r.res));
			ok = false;
		}
		kit_run_clear(&r);
		al_request_free(req);
		if (!ok)
			return;
	}
	if (tried)
		kit_pass(c);
	else
		kit_skip(c, "facts: neither workspace ro nor rw is offered");
}

typedef struct stream_buf {
	pthread_mutex_t m;
	unsigned char data[2][256];
	size_t len[2];
} stream_buf;

static void on_output(void *ctx, int stream, const unsigned char *data,
		      size_t len)
{
	stream_buf *b = ctx;
	if (stream != AL_STDOUT && stream != AL_STDERR)
		return;
	pthread_mutex_lock(&b->m);
	size_t room = sizeof(b->data[0]) - b->len[stream];
	size_t n = len < room ? len : room;
	memcpy(b->data[stream] + b->len[stream], data, n);
	b->len[stream] += n;
	pthread_mutex_unlock(&b->m);
}

void kit_case_streaming(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	kit_run r = {0};
	al_request *req = NULL;
	stream_buf b;
	memset(&b, 0, sizeof(b));
	pthread_mutex_init(&b.m, NULL);
	if (!kit_need_runner(k, c))
		goto out;
	if (!k->facts->streaming) {
		kit_skip(c, "facts: streaming not offered");
		goto out;
	}
	req = kit_req(k, c, "echo out-1\necho err-1 >&2\nsleep 0.2\necho out-2\n",
		      "import sys, time\nprint('out-1', flush=True)\n"
		      "print('err-1', file=sys.stderr, flush=True)\n"
		      "time.sleep(0.2)\nprint('out-2')\n");
	if (req == NULL)
		goto out;
	req->grant.streaming = true;
	kit_exec_opts o = {.on_output = on_output, .on_output_ctx = &b};
	if (kit_exec(k, c, req, &o, &r) < 0 ||
	    !kit_expect_outcome(c, &r, AL_OUTCOME_COMPLETED))
		goto out;
	for (int s = 0; s < 2; s++) {
		const al_bytes *o2 = &r.res->output[s];
		if (b.len[s] != o2->len || memcmp(b.data[s], o2->data, o2->len) != 0) {
			kit_fail(c, "the streamed %s (%zu bytes) differs from "
				    "the result's (%zu bytes)",
				 s == AL_STDOUT ? "stdout" : "stderr",
				 b.len[s], o2->len);
			goto out;
		}
	}
	kit_pass(c);
out:
	pthread_mutex_destroy(&b.m);
	kit_run_clear(&r);
	al_request_free(req);
}

/* ---- every result's shape -------------------------------------------- */

void kit_case_result_shape(kit_ctx *k, kit_case *c, const void *arg)
{
	(void)arg;
	pthread_mutex_lock(&k->lock);
	size_t n = k->shape_checked;
	char *problems = k->shape_problems ? strdup(k->shape_problems) : NULL;
	bool had = k->shape_problems != NULL;
	pthread_mutex_unlock(&k->lock);
	if (had)
		kit_fail(c, "%s", problems ? problems : "(out of memory)");
	else if (n == 0)
		kit_skip(c, "no case produced a result (see the cases above)");
	else
		kit_pass(c);
	free(problems);
}
